import Events
import Foundation
import Logging
import PostgresNIO

/// SQL of read cursors: per user and conversation, the time up to which everything is read. A
/// cursor only moves forward, so devices racing with older cursors never un-read anything.
struct ReadCursorStore: Sendable {
    let logger: Logger

    private static let epoch = "'1970-01-01T00:00:00Z'::timestamptz"

    /// Moves `user`'s cursor to `milliseconds` (epoch ms; nil = the conversation's newest message),
    /// never past now nor backwards. Returns the cursor and whether it moved.
    func move(_ user: UserID, in conversation: Conversation, to milliseconds: Int64?, _ c: PostgresConnection) async throws
        -> (readAt: Date, moved: Bool)
    {
        let target: PostgresRowSequence
        if let milliseconds {
            target = try await c.query(
                """
                SELECT least(\(unescaped: Self.epoch) + \(milliseconds) * interval '1 millisecond',
                             date_trunc('milliseconds', clock_timestamp()))
                """, logger: logger)
        } else {
            // The conversation's clock is its newest message's time ('-infinity' when it has none).
            target = try await c.query(
                """
                SELECT CASE WHEN last_message_at = '-infinity' THEN date_trunc('milliseconds', clock_timestamp()) ELSE last_message_at END
                FROM \(unescaped: conversation.clockTable) WHERE id = \(conversation.id)
                """, logger: logger)
        }
        var at: Date?
        for try await time in target.decode(Date.self) { at = time }
        guard let at else { throw ChatStoreError("conversation \(conversation.id) has no clock row") }
        // The previous cursor in its own statement: a locking read in a CTE of the upsert would run
        // after the upsert changed the row and find nothing.
        var previous: Date?
        for try await time in try await c.query(
            """
            SELECT read_at FROM read_cursors WHERE user_id = \(user.uuid) AND conversation_id = \(conversation.id) FOR UPDATE
            """, logger: logger
        ).decode(Date.self) {
            previous = time
        }
        for try await readAt in try await c.query(
            """
            INSERT INTO read_cursors AS r (user_id, conversation_id, read_at) VALUES (\(user.uuid), \(conversation.id), \(at))
            ON CONFLICT (user_id, conversation_id) DO UPDATE SET read_at = greatest(r.read_at, EXCLUDED.read_at)
            RETURNING r.read_at
            """, logger: logger
        ).decode(Date.self) {
            return (readAt, previous.map { readAt > $0 } ?? true)
        }
        throw ChatStoreError("read cursor upsert returned nothing")
    }

    struct Unread: Sendable {
        var conversationId: UUID
        var workspaceId: UUID
        var name: String?
        /// A DM room's other participant (the user itself in a note-to-self room); nil for a channel.
        var opponent: UUID?
        var count: Int
        var readAt: Date?
    }

    /// `user`'s channels in the workspace (in every workspace when nil) with the messages of
    /// others after their cursor (all of them without a cursor).
    func channelUnreads(of user: UserID, in workspace: WorkspaceID?, _ c: PostgresConnection) async throws -> [Unread] {
        try await unreads(
            c.query(
                """
                SELECT ch.id, ch.workspace_id, ch.name, NULL::uuid, r.read_at, (
                    SELECT count(*) FROM messages m WHERE m.conversation_id = ch.id AND m.created_at > coalesce(r.read_at, '-infinity')
                      AND m.sender_id <> \(user.uuid) AND m.deleted_at IS NULL)
                FROM channel_members cm JOIN channels ch ON ch.id = cm.channel_id
                LEFT JOIN read_cursors r ON r.user_id = cm.user_id AND r.conversation_id = ch.id
                WHERE cm.user_id = \(user.uuid) AND (\(workspace?.uuid)::uuid IS NULL OR ch.workspace_id = \(workspace?.uuid))
                ORDER BY ch.workspace_id, ch.name, ch.id
                """, logger: logger))
    }

    /// The same for `user`'s DM rooms in workspaces they still belong to.
    func roomUnreads(of user: UserID, in workspace: WorkspaceID?, _ c: PostgresConnection) async throws -> [Unread] {
        try await unreads(
            c.query(
                """
                SELECT d.id, d.workspace_id, NULL::text, CASE WHEN d.user_low = \(user.uuid) THEN d.user_high ELSE d.user_low END, r.read_at, (
                    SELECT count(*) FROM messages m WHERE m.conversation_id = d.id AND m.created_at > coalesce(r.read_at, '-infinity')
                      AND m.sender_id <> \(user.uuid) AND m.deleted_at IS NULL)
                FROM dm_rooms d JOIN workspace_members w ON w.workspace_id = d.workspace_id AND w.user_id = \(user.uuid)
                LEFT JOIN read_cursors r ON r.user_id = \(user.uuid) AND r.conversation_id = d.id
                WHERE (\(workspace?.uuid)::uuid IS NULL OR d.workspace_id = \(workspace?.uuid)) AND (d.user_low = \(user.uuid) OR d.user_high = \(user.uuid))
                ORDER BY d.workspace_id, d.created_at DESC, d.id
                """, logger: logger))
    }

    private func unreads(_ rows: PostgresRowSequence) async throws -> [Unread] {
        var result: [Unread] = []
        for try await (id, workspace, name, opponent, readAt, count) in rows.decode((UUID, UUID, String?, UUID?, Date?, Int64).self) {
            result.append(Unread(conversationId: id, workspaceId: workspace, name: name, opponent: opponent, count: Int(count), readAt: readAt))
        }
        return result
    }
}
