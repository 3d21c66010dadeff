import Database
import Events
import Foundation
import PostgresNIO

/// Message search within a workspace: case-insensitive substring (`ILIKE`, with `%`, `_` and `\`
/// of the keyword taken literally) over the conversations the reader may read, newest first.
/// The trigram index (`messages_content_trgm`) serves keywords of three or more characters,
/// Korean included; shorter ones are checked against the reader's conversations' messages.
extension MessageStore {
    func searchChannels(_ keyword: String, reader: UserID, in workspace: WorkspaceID, limit: Int, _ c: PostgresConnection) async throws
        -> [(channel: ChannelRef, message: StoredMessage)]
    {
        let pattern = LikePattern.contains(keyword)
        var found: [(id: UUID, channel: ChannelRef)] = []
        for try await (id, channelId, name) in try await c.query(
            """
            SELECT m.id, ch.id, ch.name FROM messages m
            JOIN channels ch ON ch.id = m.conversation_id AND ch.workspace_id = \(workspace.uuid)
            JOIN channel_members cm ON cm.channel_id = ch.id AND cm.user_id = \(reader.uuid)
            WHERE m.deleted_at IS NULL AND m.content ILIKE \(pattern)
            ORDER BY m.created_at DESC, m.id DESC LIMIT \(limit)
            """, logger: logger
        ).decode((UUID, UUID, String).self) {
            found.append((id, ChannelRef(id: ChannelID(channelId), workspaceId: workspace, name: name)))
        }
        let byId = try await messages(ids: found.map(\.id), c)
        return found.compactMap { hit in byId[hit.id].map { (hit.channel, $0) } }
    }

    func searchRooms(_ keyword: String, limit: Int, in rooms: [RoomRef], _ c: PostgresConnection) async throws
        -> [(room: RoomRef, message: StoredMessage)]
    {
        guard !rooms.isEmpty else { return [] }
        let roomsById = Dictionary(rooms.map { ($0.id.uuid, $0) }, uniquingKeysWith: { a, _ in a })
        var found: [(id: UUID, room: RoomRef)] = []
        for try await (id, roomId) in try await c.query(
            """
            SELECT m.id, m.conversation_id FROM messages m
            WHERE m.conversation_id = ANY(\(rooms.map(\.id.uuid))) AND m.deleted_at IS NULL AND m.content ILIKE \(LikePattern.contains(keyword))
            ORDER BY m.created_at DESC, m.id DESC LIMIT \(limit)
            """, logger: logger
        ).decode((UUID, UUID).self) {
            if let room = roomsById[roomId] { found.append((id, room)) }
        }
        let byId = try await messages(ids: found.map(\.id), c)
        return found.compactMap { hit in byId[hit.id].map { (hit.room, $0) } }
    }

    private func messages(ids: [UUID], _ c: PostgresConnection) async throws -> [UUID: StoredMessage] {
        guard !ids.isEmpty else { return [:] }
        let list = try await messages(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM messages m LEFT JOIN user_profiles p ON p.user_id = m.sender_id WHERE m.id = ANY(\(ids))
                """, logger: logger))
        return Dictionary(list.map { ($0.id.uuid, $0) }, uniquingKeysWith: { a, _ in a })
    }
}
