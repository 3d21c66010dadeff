import ClientContract
import Database
import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit
import Uploads

/// `/v1/rooms...` (docs/chat-api.md): personal rooms outside workspaces, between friends (one per
/// pair, opened again by asking again) or groups (a name, an owner, up to 10 members). Rules are
/// `PersonalRooms`'; a room the caller is not in is E13. Edits, deletes, reactions and read
/// cursors of its messages are the shared conversation routes under `/v1/rooms/{r}`.
extension ChatAPI {
    private struct OpenBody: Decodable {
        var member_ids: [String]?
        var name: String?
    }
    private struct NameBody: Decodable { var name: String? }
    private struct CodeBody: Decodable { var code: String? }
    private struct MembersBody: Decodable { var member_ids: [String]? }
    private struct InvitationResponse: ResponseEncodable, Sendable { var code: String }

    /// Mounted at `/v1/rooms`.
    var personalRoomRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get { _, context -> [PersonalRoomResponse] in
            let me = context.identity
            return try await postgres.withLiveConnection { c in
                var result: [PersonalRoomResponse] = []
                for room in try await personalRooms.store.rooms(of: me, c) { result.append(try await roomResponse(room, c)) }
                return result
            }
        }
        routes.post { request, context -> PersonalRoomResponse in
            let me = context.identity
            let body = try await request.decodeBody(as: OpenBody.self, context: context)
            let users = try Self.userIDs(body.member_ids)
            return try await postgres.withLiveTransaction(logger: logger) { c in
                try await roomResponse(try await personalRooms.open(with: users, name: body.name, by: me, c), c)
            }
        }
        routes.post("join") { request, context -> PersonalRoomResponse in
            let me = context.identity
            let body = try await request.decodeBody(as: CodeBody.self, context: context)
            guard let code = body.code.flatMap(InviteCode.parse) else { throw APIError.badRequest("code is required") }
            return try await postgres.withLiveTransaction(logger: logger) { c in try await roomResponse(try await personalRooms.join(code: code, me, c), c) }
        }
        routes.get(":conversation") { _, context -> PersonalRoomResponse in
            let me = context.identity
            let id: RoomID = try pathID(context, "conversation")
            return try await postgres.withLiveConnection { c in try await roomResponse(try await personalRooms.room(id, me, c), c) }
        }
        routes.patch(":conversation") { request, context -> PersonalRoomResponse in
            let me = context.identity
            let id: RoomID = try pathID(context, "conversation")
            let body = try await request.decodeBody(as: NameBody.self, context: context)
            return try await postgres.withLiveTransaction(logger: logger) { c in
                try await personalRooms.rename(id, to: body.name, by: me, c)
                return try await roomResponse(try await personalRooms.room(id, me, c), c)
            }
        }
        routes.post(":conversation/members") { request, context -> PersonalRoomResponse in
            let me = context.identity
            let id: RoomID = try pathID(context, "conversation")
            let users = try Self.userIDs(try await request.decodeBody(as: MembersBody.self, context: context).member_ids)
            return try await postgres.withLiveTransaction(logger: logger) { c in
                try await personalRooms.add(users, to: id, by: me, c)
                return try await roomResponse(try await personalRooms.room(id, me, c), c)
            }
        }
        routes.delete(":conversation/members/:user") { _, context -> HTTPResponse.Status in
            let me = context.identity
            let (id, user): (RoomID, UserID) = (try pathID(context, "conversation"), try pathID(context, "user"))
            let outcome = try await postgres.withLiveTransaction(logger: logger) { c in try await personalRooms.remove(user, from: id, by: me, c) }
            removeRoomFiles(outcome.removedFiles)
            return .ok
        }
        routes.post(":conversation/invitation") { _, context -> InvitationResponse in
            let me = context.identity
            let id: RoomID = try pathID(context, "conversation")
            return try await postgres.withLiveTransaction(logger: logger) { c in InvitationResponse(code: try await personalRooms.invitation(id, by: me, c)) }
        }
        routes.post(":conversation/chats") { request, context -> JSONResponse in
            let me = context.identity
            let id: RoomID = try pathID(context, "conversation")
            return try await receive(
                request, context,
                member: { try await postgres.withLiveConnection { try await personalRooms.store.room(id, member: me, lock: false, $0) } }
            ) { form, text, _ in
                try await postgres.withLiveTransaction(logger: logger) { c in
                    let room = try await personalRooms.room(id, me, lock: true, c)
                    let (message, isNew) = try await post(text, files: files.paths(form.files, .dm), in: room, by: me, c)
                    return (JSONResponse(DMChatResponse(message, in: room)), isNew)
                }
            }
        }
        routes.get(":conversation/chats") { request, context -> JSONResponse in
            let me = context.identity
            let id: RoomID = try pathID(context, "conversation")
            return try await postgres.withLiveConnection { c in
                let room = try await personalRooms.room(id, me, c)
                return JSONResponse(array: try await history(.room(room), request, c).map { DMChatResponse($0, in: room) })
            }
        }
        return routes
    }

    /// Posts into a personal room the caller locked: the ban rule first, then the message and its
    /// `chat.dm-message.created` (without a workspace, with the room's alias and group name).
    func post(_ draft: MessageDraft, files: [String], in room: RoomRef, by me: UserID, _ c: PostgresConnection) async throws -> (
        StoredMessage, Bool
    ) {
        try await personalRooms.admit(message: room, from: me, c)
        return try await post(draft, files: files, by: me, in: .room(room), c) { m in
            ChatEvents.DirectMessageCreated(
                messageId: m.id, workspaceId: nil, roomId: room.id, participants: Array(Set(room.participants)).sorted(), sender: m.sender,
                content: m.content, files: m.files, createdAt: m.createdAt, parentId: m.parentId, mentions: m.mentionsOrNil,
                parentName: m.parent?.senderName, parentContent: m.parent?.content, roomAlias: room.alias, roomName: room.group ? room.name : nil)
        }
    }

    func roomResponse(_ room: RoomRef, _ c: PostgresConnection) async throws -> PersonalRoomResponse {
        var members: [MemberSummary] = []
        for user in room.participants { members.append(MemberSummary(try await messages.sender(user, c))) }
        return PersonalRoomResponse(
            room_id: room.id, alias: room.alias, group: room.group, name: room.group ? room.name : nil, icon: room.icon, owner_id: room.ownerId,
            createdAt: Timestamp.format(room.createdAt), members: members)
    }

    /// Removes a deleted room's files (its messages' attachments and its icon) after the commit.
    func removeRoomFiles(_ paths: [String]) {
        files.remove(paths: paths.filter { !$0.hasPrefix(Self.roomIconPrefix) })
        for path in paths where path.hasPrefix(Self.roomIconPrefix) { roomIcons.remove(path) }
    }

    /// Where group icons are stored (`/static/roomIcons/<file>`, chat's volume).
    static let roomIconPrefix = "/static/roomIcons/"

    /// User ids of a body (at most 100 of them; E11 for anything else).
    private static func userIDs(_ ids: [String]?) throws -> [UserID] {
        guard let ids, ids.count <= 100 else { throw APIError.badRequest("member_ids is a list of at most 100 user ids") }
        return try ids.map {
            guard let id = UserID($0) else { throw APIError.badRequest("member_ids holds a malformed id") }
            return id
        }
    }
}

/// A personal room on `/v1`: a friends' room has no name (clients show the other member).
struct PersonalRoomResponse: ResponseEncodable, Sendable {
    var room_id: RoomID
    var alias: Int64?
    var group: Bool
    var name: String?
    /// A group's icon, a relative `/static/roomIcons/...` path.
    var icon: String?
    var owner_id: UserID?
    var createdAt: String
    var members: [MemberSummary]
}
