import ClientContract
import Database
import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit

/// `/v1/workspaces/{w}/dms...` (client contract §1.5, §1.6): one room per pair of workspace
/// members; get-or-create is idempotent (both clients call it before opening a DM). A room is
/// open to its participants while they are members of the workspace; to anyone else it is E13.
extension ChatAPI {
    /// Mounted at `/v1/workspaces/{w}/dms`.
    var dmRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get { request, context -> [DMRoomResponse] in
            let me = context.identity
            let workspace: WorkspaceID = try pathID(context, "workspace")
            return try await postgres.withLiveConnection { c in
                guard try await rooms.isWorkspaceMember(me, of: workspace, c) else { throw APIError.notFound("workspace") }
                var result: [DMRoomResponse] = []
                for room in try await rooms.rooms(of: me, in: workspace, c) {
                    let other = try await messages.sender(room.other(than: me), c)
                    result.append(DMRoomResponse(room_id: room.id, createdAt: Timestamp.format(room.createdAt), user: MemberSummary(other)))
                }
                return result
            }
        }
        routes.post { request, context -> DMRoomResponse in
            let me = context.identity
            let workspace: WorkspaceID = try pathID(context, "workspace")
            let body = try await request.decodeBody(as: OpponentBody.self, context: context)
            guard let opponent = body.opponent_id.flatMap(UserID.init) else { throw APIError.badRequest("opponent_id is required") }
            return try await postgres.withLiveTransaction(logger: logger) { c in
                guard try await rooms.isWorkspaceMember(me, of: workspace, c) else { throw APIError.notFound("workspace") }
                guard try await rooms.isWorkspaceMember(opponent, of: workspace, c) else { throw APIError.notFound("opponent is not a member") }
                let room = try await rooms.room(between: me, and: opponent, in: workspace, c)
                return DMRoomResponse(
                    room_id: room.id, createdAt: Timestamp.format(room.createdAt), user: MemberSummary(try await messages.sender(opponent, c)))
            }
        }
        routes.post(":conversation/chats") { request, context -> JSONResponse in
            let me = context.identity
            let (workspace, roomId): (WorkspaceID, RoomID) = (try pathID(context, "workspace"), try pathID(context, "conversation"))
            return try await receive(
                request, context,
                member: {
                    try await postgres.withLiveConnection { try await rooms.room(roomId, in: workspace, participant: me, lock: false, $0) }
                }
            ) { form, text, _ in
                try await postgres.withLiveTransaction(logger: logger) { c in
                    guard let room = try await rooms.room(roomId, in: workspace, participant: me, lock: true, c) else { throw APIError.notFound("room") }
                    let (message, isNew) = try await post(text, files: files.paths(form.files, .dm), by: me, in: .room(room), c) { m in
                        ChatEvents.DirectMessageCreated(
                            messageId: m.id, workspaceId: workspace, roomId: roomId, participants: Array(Set(room.participants)).sorted(),
                            sender: m.sender, content: m.content, files: m.files, createdAt: m.createdAt, parentId: m.parentId,
                            mentions: m.mentionsOrNil, parentName: m.parent?.senderName, parentContent: m.parent?.content, roomAlias: room.alias
                        )
                    }
                    return (JSONResponse(DMChatResponse(message, in: room)), isNew)
                }
            }
        }
        routes.get(":conversation/chats") { request, context -> JSONResponse in
            let me = context.identity
            let (workspace, roomId): (WorkspaceID, RoomID) = (try pathID(context, "workspace"), try pathID(context, "conversation"))
            return try await postgres.withLiveConnection { c in
                guard let room = try await rooms.room(roomId, in: workspace, participant: me, lock: false, c) else { throw APIError.notFound("room") }
                return JSONResponse(array: try await history(.room(room), request, c).map { DMChatResponse($0, in: room) })
            }
        }
        routes.get(":conversation/unreads") { request, context -> DMUnreadResponse in
            let me = context.identity
            let (workspace, roomId): (WorkspaceID, RoomID) = (try pathID(context, "workspace"), try pathID(context, "conversation"))
            let after = try Self.milliseconds(request.uri.queryParameters.get("after"))
            return try await postgres.withLiveConnection { c in
                guard let room = try await rooms.room(roomId, in: workspace, participant: me, lock: false, c) else { throw APIError.notFound("room") }
                var count = 0
                if let after { count = try await messages.unreadCount(.room(room), after: after, reader: me, c) }
                return DMUnreadResponse(room_id: room.id, count: count)
            }
        }
        return routes
    }
}
