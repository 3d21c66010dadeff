import ClientContract
import Events
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PostgresNIO
import ServiceKit

/// What the gateway's native protocol asks chat (docs/native-gateway.md), outside `/v1` so the
/// gateway's route table never forwards clients here:
/// - `GET /internal/v1/users/{user}/session`: the `ready` snapshot — the user's workspaces, the
///   channels they are in and their DM rooms, each with its unread count (as `.../unreads`).
/// - `POST /internal/v1/users/{user}/replay` `{"cursors":[{"conversation_id","after_ms"}],"limit"}`:
///   the messages after each cursor (epoch milliseconds, strictly after; per conversation the
///   times are strictly increasing, so a time is a position) of the conversations the user can
///   still read, oldest first overall. One line per message:
///   `<t>\t<conversation id>\t<message id>\t<created ms>\t<JSON object>`, preceded by one
///   `conversation.removed\t<conversation id>` line per asked conversation the user can no
///   longer read (a resuming session must stop following it); header
///   `Chatsuite-Replay-More: true` when more than `limit` messages were found (the answer then
///   holds none: the client is too far behind to resume).
extension ChatAPI {
    static let replayMoreHeader = HTTPField.Name("Chatsuite-Replay-More")!

    func addSessionRoutes(to router: Router<SuiteRequestContext>) {
        router.get("/internal/v1/users/:user/session") { _, context -> Response in
            guard let user = context.parameters.get("user").flatMap(UserID.init) else { return Response(status: .badRequest) }
            let snapshot = try await postgres.withConnection { try await sessionSnapshot(of: user, $0) }
            var headers = HTTPFields()
            headers[.contentType] = "application/json; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: snapshot.jsonBuffer))
        }
        router.post("/internal/v1/users/:user/replay") { request, context -> Response in
            guard let user = context.parameters.get("user").flatMap(UserID.init),
                  let body = try? await request.decode(as: ReplayRequest.self, context: context),
                  body.cursors.count <= 10_000, (1...10_000).contains(body.limit) else {
                return Response(status: .badRequest)
            }
            let (lines, more) = try await postgres.withConnection { try await replay(body, for: user, $0) }
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; charset=utf-8"
            if more { headers[Self.replayMoreHeader] = "true" }
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: lines))
        }
    }

    private func sessionSnapshot(of user: UserID, _ c: PostgresConnection) async throws -> SessionSnapshot {
        var snapshot = SessionSnapshot()
        snapshot.channels = try await cursors.channelUnreads(of: user, in: nil, c)
        snapshot.rooms = try await cursors.roomUnreads(of: user, in: nil, c)
        for try await workspace in try await c.query("""
            SELECT workspace_id FROM workspace_members WHERE user_id = \(user.uuid) ORDER BY workspace_id
            """, logger: logger).decode(UUID.self)
        {
            snapshot.workspaces.append(workspace)
        }
        return snapshot
    }

    private func replay(_ request: ReplayRequest, for user: UserID, _ c: PostgresConnection) async throws -> (ByteBuffer, Bool) {
        let wanted = Dictionary(request.cursors.map { ($0.conversation_id, $0.after_ms) }, uniquingKeysWith: max)
        let ids = Array(wanted.keys)
        var conversations: [Conversation] = []
        for try await (id, workspace, name, low, high, created) in try await c.query("""
            SELECT ch.id, ch.workspace_id, ch.name, NULL::uuid, NULL::uuid, NULL::timestamptz
            FROM channels ch JOIN channel_members cm ON cm.channel_id = ch.id AND cm.user_id = \(user.uuid)
            WHERE ch.id = ANY(\(ids))
            UNION ALL
            SELECT d.id, d.workspace_id, NULL, d.user_low, d.user_high, d.created_at
            FROM dm_rooms d JOIN workspace_members w ON w.workspace_id = d.workspace_id AND w.user_id = \(user.uuid)
            WHERE d.id = ANY(\(ids)) AND (d.user_low = \(user.uuid) OR d.user_high = \(user.uuid))
            """, logger: logger).decode((UUID, UUID, String?, UUID?, UUID?, Date?).self)
        {
            if let name {
                conversations.append(.channel(ChannelRef(id: ChannelID(id), workspaceId: WorkspaceID(workspace), name: name)))
            } else if let low, let high, let created {
                conversations.append(.room(RoomRef(
                    id: RoomID(id), workspaceId: WorkspaceID(workspace), participants: [UserID(low), UserID(high)], createdAt: created
                )))
            }
        }
        var out = ByteBuffer()
        let readable = Set(conversations.map(\.id))
        for id in ids where !readable.contains(id) {
            out.writeString("conversation.removed\t\(id.uuidString.lowercased())\n")
        }
        var found: [(message: StoredMessage, conversation: Conversation)] = []
        for conversation in conversations {
            for message in try await messages.history(conversation, after: wanted[conversation.id] ?? 0, c) {
                found.append((message, conversation))
                if found.count > request.limit { return (ByteBuffer(), true) }
            }
        }
        found.sort { ($0.message.createdAt, $0.message.id.uuid.lowercased) < ($1.message.createdAt, $1.message.id.uuid.lowercased) }
        for (message, conversation) in found {
            let type: String
            var json: ByteBuffer
            switch conversation {
            case .channel(let channel):
                type = "channel.message"
                json = ChannelChatResponse(message, in: channel).jsonBuffer
            case .room(let room):
                type = "dm.message"
                json = DMChatResponse(message, in: room).jsonBuffer
            }
            out.writeString("\(type)\t\(conversation.id.uuidString.lowercased())\t\(message.id.uuid.lowercased)\t\(Timestamp.milliseconds(message.createdAt))\t")
            out.writeBuffer(&json)
            out.writeString("\n")
        }
        return (out, false)
    }
}

private struct ReplayRequest: Decodable {
    struct Cursor: Decodable {
        var conversation_id: UUID
        var after_ms: Int64
    }
    var cursors: [Cursor]
    var limit: Int
}

/// The `ready` snapshot (JSON written by hand: snake_case ids as the contract prints them).
struct SessionSnapshot: JSONWritable {
    var workspaces: [UUID] = []
    var channels: [ReadCursorStore.Unread] = []
    var rooms: [ReadCursorStore.Unread] = []

    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("workspaces")
        json.beginArray()
        for workspace in workspaces {
            json.beginObject()
            json.member("workspace_id", workspace.uuidString.lowercased())
            json.endObject()
        }
        json.endArray()
        json.key("channels")
        json.beginArray()
        for channel in channels {
            json.beginObject()
            json.member("channel_id", channel.conversationId.uuidString.lowercased())
            json.member("workspace_id", channel.workspaceId.uuidString.lowercased())
            json.member("name", channel.name)
            json.member("unread_count", channel.count)
            json.endObject()
        }
        json.endArray()
        json.key("dms")
        json.beginArray()
        for room in rooms {
            json.beginObject()
            json.member("room_id", room.conversationId.uuidString.lowercased())
            json.member("workspace_id", room.workspaceId.uuidString.lowercased())
            json.member("user_id", room.opponent.map { $0.uuidString.lowercased() })
            json.member("unread_count", room.count)
            json.endObject()
        }
        json.endArray()
        json.endObject()
    }
}
