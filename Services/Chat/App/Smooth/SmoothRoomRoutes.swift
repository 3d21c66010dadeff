import Database
import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit
import Uploads

/// Smooth's rooms (`/community-server/room...`, client contract §2.1), served by chat under
/// `/smooth/community/room`: personal rooms of friends and groups (`PersonalRooms`), ids as
/// integer aliases, answers in Smooth's envelope with its community codes (4018 no such room,
/// 4019 a friends' room cannot be changed, 4020 inviting oneself, 4021 nobody named, 4013
/// already in, 4007 not a member or not a friend, 4005 bad invitation, 1401 not the owner).
extension ChatAPI {
    private struct OpenBody: Decodable {
        var members: [Int64]?
        var name: String?
    }
    private struct NameBody: Decodable {
        var id: Int64?
        var name: String?
    }
    private struct IdBody: Decodable { var id: Int64? }
    private struct CodeBody: Decodable { var code: String? }
    private struct MembersBody: Decodable {
        var id: Int64?
        var members: [Int64]?
    }
    private struct Link: Encodable, Sendable { var url: String }

    func addSmoothRoomRoutes(to router: some RouterMethods<SuiteRequestContext>) {
        let smooth = router.group("smooth/community/room").add(middleware: SmoothErrorMiddleware<SuiteRequestContext>(surface: .community))
        smooth.get("icons/:file") { _, context in try await roomIcon(context) }
        let routes = smooth.group(context: AuthenticatedContext.self)
        routes.get { request, context -> SmoothResponse<SmoothRoomList> in
            let me = context.identity
            return SmoothResponse(
                try await postgres.withLiveConnection { c in
                    var rooms: [SmoothRoom] = []
                    for room in try await personalRooms.store.rooms(of: me, c) {
                        rooms.append(try await smoothRoom(room, for: me, request: request, c))
                    }
                    return SmoothRoomList(rooms: rooms)
                })
        }
        // The rooms with unread messages, for the edge's `GET /community` (Smooth's home screen).
        routes.get("unreceived") { request, context -> SmoothResponse<[SmoothUnreadRoom]> in
            let me = context.identity
            return SmoothResponse(
                try await postgres.withLiveConnection { c in
                    var rooms: [SmoothUnreadRoom] = []
                    for (room, count) in try await personalRooms.store.unread(of: me, c) {
                        let listed = try await smoothRoom(room, for: me, request: request, c)
                        rooms.append(SmoothUnreadRoom(id: listed.id, name: listed.name, icon: listed.icon, count: count))
                    }
                    return rooms
                })
        }
        routes.post { request, context -> SmoothResponse<SmoothRoomDetail> in
            let me = context.identity
            let body = try await request.decodeBody(as: OpenBody.self, context: context)
            return SmoothResponse(
                try await postgres.withLiveTransaction(logger: logger) { c in
                    let users = try await smoothUsers(body.members ?? [], c)
                    return try await smoothDetail(try await personalRooms.open(with: users, name: body.name, by: me, c), for: me, request: request, c)
                })
        }
        routes.get(":room") { request, context -> SmoothResponse<SmoothRoomDetail> in
            let me = context.identity
            guard let alias = context.parameters.get("room").flatMap(IntegerAlias.parse) else { throw SmoothError.invalidRoom }
            return SmoothResponse(
                try await postgres.withLiveConnection { c in
                    guard let room = try await personalRooms.store.room(alias: alias, member: me, c) else { throw SmoothError.invalidRoom }
                    return try await smoothDetail(room, for: me, request: request, c)
                })
        }
        routes.patch("name") { request, context -> SmoothDone in
            let me = context.identity
            let body = try await request.decodeBody(as: NameBody.self, context: context)
            try await postgres.withLiveTransaction(logger: logger) { c in
                try await personalRooms.rename(try await roomID(body.id, me, c), to: body.name, by: me, c)
            }
            return SmoothDone()
        }
        routes.patch("icon") { request, context -> SmoothDone in
            try await changeRoomIcon(request, context)
        }
        routes.post("invitation") { request, context -> SmoothResponse<Link> in
            let me = context.identity
            let body = try await request.decodeBody(as: IdBody.self, context: context)
            let code = try await postgres.withLiveTransaction(logger: logger) { c in
                try await personalRooms.invitation(try await roomID(body.id, me, c), by: me, c)
            }
            return SmoothResponse(Link(url: request.smoothPublicURL + "/invite/r/" + code))
        }
        routes.patch("member") { request, context -> SmoothResponse<SmoothRoomDetail> in
            let me = context.identity
            let body = try await request.decodeBody(as: CodeBody.self, context: context)
            guard let code = body.code.flatMap(InviteCode.parse) else { throw SmoothError.invalidInvitation }
            return SmoothResponse(
                try await postgres.withLiveTransaction(logger: logger) { c in
                    try await smoothDetail(try await personalRooms.join(code: code, me, c), for: me, request: request, c)
                })
        }
        routes.post("member") { request, context -> SmoothDone in
            let me = context.identity
            let body = try await request.decodeBody(as: MembersBody.self, context: context)
            try await postgres.withLiveTransaction(logger: logger) { c in
                let room = try await roomID(body.id, me, c)
                try await personalRooms.add(try await smoothUsers(body.members ?? [], c), to: room, by: me, c)
            }
            return SmoothDone()
        }
        routes.delete(":room/member") { request, context -> SmoothDone in
            let me = context.identity
            guard let alias = context.parameters.get("room").flatMap(IntegerAlias.parse) else { throw SmoothError.invalidRoom }
            guard let member = request.uri.queryParameters.get("id").flatMap(IntegerAlias.parse) else { throw SmoothError.badRequest }
            let outcome = try await postgres.withLiveTransaction(logger: logger) { c -> RoomOutcome in
                let room = try await roomID(alias, me, c)
                guard let user = try await personalRooms.store.users(aliases: [member], c)[member] else { throw SmoothError.notMember }
                return try await personalRooms.remove(user, from: room, by: me, c)
            }
            removeRoomFiles(outcome.removedFiles)
            return SmoothDone()
        }
    }

    /// `PATCH /room/icon`: multipart `id` and `icon`; without an icon the group has none.
    private func changeRoomIcon(_ request: Request, _ context: AuthenticatedContext) async throws -> SmoothDone {
        let me = context.identity
        guard request.isMultipart else { throw SmoothError.badRequest }
        let parts: [FormPart]
        do {
            parts = try await request.multipartParts(limit: roomIcons.multipartLimit)
        } catch let error as APIError where error.status == .badRequest {
            throw SmoothError.badRequest
        }
        let alias = parts.first { $0.name == "id" }.flatMap { IntegerAlias.parse($0.text.trimmingCharacters(in: .whitespaces)) }
        let icon: String?
        do {
            icon = try parts.first { $0.name == "icon" && $0.body.readableBytes > 0 }.map(roomIcons.store)
        } catch let error as APIError where error.status == .badRequest {
            throw SmoothError.badRequest
        }
        let previous: String?
        do {
            previous = try await postgres.withLiveTransaction(logger: logger) { c in
                try await personalRooms.setIcon(try await roomID(alias, me, c), to: icon, by: me, c)
            }
        } catch {
            roomIcons.remove(icon)
            throw error
        }
        roomIcons.remove(previous)
        return SmoothDone()
    }

    /// A group icon, without a token (Smooth's client loads images by URL); only files that are a
    /// room's icon are served here.
    private func roomIcon(_ context: SuiteRequestContext) async throws -> Response {
        let file = context.parameters.get("file") ?? ""
        guard ImageDirectory.isOurName(file), try await personalRooms.store.isIcon(Self.roomIconPrefix + file, postgres) else {
            throw SmoothError.invalidRoom
        }
        var response = try await roomIcons.response(named: file, context: context)
        response.headers[.cacheControl] = "public, max-age=86400, immutable"
        return response
    }

    /// The room an alias names when the caller is in it (4018 otherwise).
    private func roomID(_ alias: Int64?, _ me: UserID, _ c: PostgresConnection) async throws -> RoomID {
        guard let alias, let room = try await personalRooms.store.room(alias: alias, member: me, c) else { throw SmoothError.invalidRoom }
        return room.id
    }

    /// Users named by integer aliases; an unknown one is 4007 (as a user who is not a friend).
    private func smoothUsers(_ aliases: [Int64], _ c: PostgresConnection) async throws -> [UserID] {
        guard aliases.count <= 100 else { throw SmoothError.badRequest }
        let known = try await personalRooms.store.users(aliases: aliases, c)
        return try aliases.map {
            guard let user = known[$0] else { throw SmoothError.notMember }
            return user
        }
    }

    private func smoothRoom(_ room: RoomRef, for me: UserID, request: Request, _ c: PostgresConnection) async throws -> SmoothRoom {
        let profiles = try await personalRooms.store.profiles(room.participants, c)
        let other = room.group ? nil : profiles.first { $0.userId == room.other(than: me) }
        return SmoothRoom(
            id: room.alias ?? 0, group: room.group, members: profiles.compactMap(\.alias), count: room.participants.count,
            name: (room.group ? room.name : other?.nickname) ?? "",
            icon: room.group ? roomIconURL(room.icon, request: request) : SmoothURL.profileImage(other?.profileImage, request),
            state: other.map { $0.online ? "online" : "offline" }, createdAt: Timestamp.formatWithoutZone(room.createdAt))
    }

    private func smoothDetail(_ room: RoomRef, for me: UserID, request: Request, _ c: PostgresConnection) async throws -> SmoothRoomDetail {
        let profiles = try await personalRooms.store.profiles(room.participants, c)
        let other = room.group ? nil : profiles.first { $0.userId == room.other(than: me) }
        return SmoothRoomDetail(
            id: room.alias ?? 0, group: room.group, count: room.participants.count, name: (room.group ? room.name : other?.nickname) ?? "",
            members: profiles.map {
                SmoothRoomMember(
                    id: $0.alias ?? 0, nickname: $0.nickname, image: SmoothURL.profileImage($0.profileImage, request),
                    code: $0.code ?? "", owner: room.ownerId == $0.userId, state: $0.online ? "online" : "offline")
            })
    }

    private func roomIconURL(_ icon: String?, request: Request) -> String? {
        guard let icon, icon.hasPrefix(Self.roomIconPrefix) else { return nil }
        return request.smoothPublicURL + request.smoothPrefix(.community) + "/room/icons/" + icon.dropFirst(Self.roomIconPrefix.count)
    }
}

/// `GET /room`'s result.
struct SmoothRoomList: Encodable, Sendable {
    var rooms: [SmoothRoom]
}

/// A room in Smooth's list: a friends' room shows the friend (name, image, presence).
struct SmoothRoom: Encodable, Sendable {
    var id: Int64
    var group: Bool
    var members: [Int64]
    var count: Int
    var name: String
    @SmoothNull var icon: String?
    @SmoothNull var state: String?
    var createdAt: String
}

/// A room in `GET /community`'s `rooms`: `count` is how many messages the user has not read.
struct SmoothUnreadRoom: Encodable, Sendable {
    var id: Int64
    var name: String
    @SmoothNull var icon: String?
    var count: Int
}

/// `GET /room/{id}`'s result.
struct SmoothRoomDetail: Encodable, Sendable {
    var id: Int64
    var group: Bool
    var count: Int
    var name: String
    var members: [SmoothRoomMember]
}

struct SmoothRoomMember: Encodable, Sendable {
    var id: Int64
    var nickname: String
    @SmoothNull var image: String?
    var code: String
    var owner: Bool
    var state: String
}
