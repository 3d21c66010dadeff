import Database
import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit

/// Server-side read cursors (additive; the contract's `unreads?after=` stays as it is):
/// - `PUT {prefix}/read` `{cursor_date?}`: everything up to `cursor_date` (default: the newest
///   message) is read → `{channel_id | room_id, readAt, count}`; publishes `chat.read-cursor.moved`
///   on `chat.read.v1` when the cursor moved (it never moves back).
/// - `GET /v1/workspaces/{w}/unreads`: `{channels: [{channel_id, name, count, readAt?}],
///   dms: [{room_id, count, readAt?}]}` — others' messages after each cursor (all without one).
extension ChatAPI {
    private struct ReadBody: Decodable { var cursor_date: String? }

    struct ReadStateResponse: ResponseEncodable, Sendable {
        var channel_id: ChannelID?
        var room_id: RoomID?
        var name: String?
        var readAt: String?
        var count: Int

        init(_ conversation: Conversation, readAt: Date?, count: Int) {
            switch conversation {
            case .channel(let channel):
                channel_id = channel.id
                name = channel.name
            case .room(let room):
                room_id = room.id
            }
            self.readAt = readAt.map(Timestamp.format)
            self.count = count
        }

        init(_ unread: ReadCursorStore.Unread, channel: Bool) {
            if channel { channel_id = ChannelID(unread.conversationId) } else { room_id = RoomID(unread.conversationId) }
            name = unread.name
            readAt = unread.readAt.map(Timestamp.format)
            count = unread.count
        }
    }

    struct UnreadSummaryResponse: ResponseEncodable, Sendable {
        var channels: [ReadStateResponse]
        var dms: [ReadStateResponse]
    }

    /// Mounted at `kind.path` under `/v1`.
    func readCursorRoutes(_ kind: ConversationKind) -> RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.put("read") { request, context -> ReadStateResponse in
            let me = context.identity
            let body = try await request.decodeBody(as: ReadBody.self, context: context)
            let cursor = try Self.milliseconds(body.cursor_date)
            return try await postgres.withLiveTransaction(logger: logger) { c in
                let conversation = try await conversation(kind, context, lock: false, c)
                let (readAt, moved) = try await cursors.move(me, in: conversation, to: cursor, c)
                if moved {
                    try await append(
                        ChatEvents.ReadCursorMoved(
                            userId: me, workspaceId: conversation.workspaceId, conversation: conversation.event, readAt: readAt
                        ), c)
                }
                let count = try await messages.unreadCount(conversation, after: Timestamp.milliseconds(readAt), reader: me, c)
                return ReadStateResponse(conversation, readAt: readAt, count: count)
            }
        }
        return routes
    }

    /// Mounted at `/v1/workspaces/{w}`.
    var unreadSummaryRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("unreads") { request, context -> UnreadSummaryResponse in
            let me = context.identity
            let workspace: WorkspaceID = try pathID(context, "workspace")
            return try await postgres.withLiveConnection { c in
                guard try await rooms.isWorkspaceMember(me, of: workspace, c) else { throw APIError.notFound("workspace") }
                return UnreadSummaryResponse(
                    channels: try await cursors.channelUnreads(of: me, in: workspace, c).map { ReadStateResponse($0, channel: true) },
                    dms: try await cursors.roomUnreads(of: me, in: workspace, c).map { ReadStateResponse($0, channel: false) }
                )
            }
        }
        return routes
    }
}
