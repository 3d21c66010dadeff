import ClientContract
import Database
import Events
import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// Why a personal-room action is refused; each surface renders it in its own codes (`/v1`'s
/// E-codes, Smooth's 4xxx on `/community-server`, 2xxx on `/chat-server`).
enum RoomError: SurfaceRefusal, Equatable {
    /// No such room, or the caller is not in it.
    case notFound
    /// A user named is not the caller's friend (or does not exist).
    case notFriend
    /// Only the group's owner may do that, or a member may remove only themself.
    case noPermission
    /// A friends' room has no name, icon, invitations or extra members.
    case notGroup
    case invitingSelf
    case membersRequired
    case tooManyMembers
    case alreadyMember
    case notMember
    case invalidInvitation
    case invalidName
    /// One of the two banned the other: their room takes no new messages.
    case banned

    var apiError: APIError {
        switch self {
        case .notFound: .notFound("room")
        case .notFriend: .notFound("not a friend")
        case .noPermission: .forbidden("only the group's owner may remove others")
        case .notGroup: .notPossible("a friends' room has two members and no name")
        case .invitingSelf: .badRequest("member_ids must name others")
        case .membersRequired: .badRequest("member_ids is required")
        case .tooManyMembers: .notPossible("a group has at most \(PersonalRoomStore.maximumMembers) members")
        case .alreadyMember: .duplicate("already a member")
        case .notMember: .notFound("not a member")
        case .invalidInvitation: .notFound("invitation")
        case .invalidName: .badRequest("name must be 1 to 100 characters on one line")
        case .banned: .forbidden("one of you blocked the other")
        }
    }

    func smoothError(_ surface: SmoothSurface) -> SmoothError {
        // `/chat-server` (a file sent into a room) knows only its 2xxx codes.
        if surface == .authAndChat { return self == .notFound ? .invalidRoom : .unauthorised }
        switch self {
        case .notFound: return .invalidRoom
        case .notFriend, .notMember: return .notMember
        case .noPermission, .banned: return .noPermission
        case .notGroup: return .personalRoom
        case .invitingSelf: return .cannotInviteSelf
        case .membersRequired: return .membersRequired
        case .tooManyMembers, .invalidName: return .badRequest
        case .alreadyMember: return .alreadyMember
        case .invalidInvitation: return .invalidInvitation
        }
    }
}

/// What a change produced: the room after it and the files to remove once committed.
struct RoomOutcome: Sendable {
    var room: RoomRef?
    var removedFiles: [String] = []
}

/// The personal-room domain shared by `/v1/rooms` and Smooth's `/community-server/room`: every
/// rule lives here, every change publishes `chat.room.changed` in its transaction.
struct PersonalRooms: Sendable {
    let store: PersonalRoomStore
    let logger: Logger

    /// A group name: 1–100 characters on one line.
    static let nameLimit = TextLimit("name", characters: 100)
    /// How long a group invitation link lasts (as Smooth's: a day).
    static let invitationSeconds = 86_400

    static func validName(_ name: String?) throws(RoomError) -> String {
        let trimmed = (name ?? "").trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, !trimmed.contains(where: \.isNewline), Self.nameLimit.allows(trimmed) else { throw .invalidName }
        return trimmed
    }

    /// Opens a room with friends: one friend → the pair's room (the same one every time, shown
    /// again if it was closed); several → a new group owned by `me`, named `name` or after its
    /// members.
    func open(with users: [UserID], name: String?, by me: UserID, _ c: PostgresConnection) async throws -> RoomRef {
        let others = Self.distinct(users)
        guard !others.contains(me) else { throw RoomError.invitingSelf }
        guard !others.isEmpty else { throw RoomError.membersRequired }
        guard others.count + 1 <= PersonalRoomStore.maximumMembers else { throw RoomError.tooManyMembers }
        guard try await store.friends(of: me, among: others, c).count == others.count else { throw RoomError.notFriend }
        if others.count == 1, name == nil {
            let (room, created) = try await store.friendsRoom(me, others[0], c)
            if created { try await publish(room, .created, by: me, added: room.participants, c) }
            return room
        }
        let title: String
        if let name {
            title = try Self.validName(name)
        } else {
            let names = try await store.profiles([me] + others, c).map(\.nickname).filter { !$0.isEmpty }
            title = String(names.joined(separator: ", ").prefix(100))
        }
        let room = try await store.createGroup(owner: me, members: others, name: title, c)
        try await publish(room, .created, by: me, added: room.participants, c)
        return room
    }

    /// The room when `me` is in it, locked when `lock`.
    func room(_ id: RoomID, _ me: UserID, lock: Bool = false, _ c: PostgresConnection) async throws -> RoomRef {
        guard let room = try await store.room(id, member: me, lock: lock, c) else { throw RoomError.notFound }
        return room
    }

    func rename(_ id: RoomID, to name: String?, by me: UserID, _ c: PostgresConnection) async throws {
        let room = try await group(id, me, c)
        let name = try Self.validName(name)
        try await store.update(room.id, name: name, icon: room.icon, owner: room.ownerId, c)
        var renamed = room
        renamed.name = name
        try await publish(renamed, .renamed, by: me, c)
    }

    /// Sets (or, with nil, clears) a group's icon; returns the previous icon's path.
    func setIcon(_ id: RoomID, to icon: String?, by me: UserID, _ c: PostgresConnection) async throws -> String? {
        let room = try await group(id, me, c)
        try await store.update(room.id, name: room.name, icon: icon, owner: room.ownerId, c)
        var changed = room
        changed.icon = icon
        try await publish(changed, .icon, by: me, c)
        return room.icon
    }

    /// Adds `me`'s friends to a group.
    func add(_ users: [UserID], to id: RoomID, by me: UserID, _ c: PostgresConnection) async throws {
        let room = try await group(id, me, c)
        let newcomers = Self.distinct(users)
        guard !newcomers.isEmpty else { throw RoomError.membersRequired }
        guard !newcomers.contains(me) else { throw RoomError.invitingSelf }
        guard !newcomers.contains(where: room.participants.contains) else { throw RoomError.alreadyMember }
        guard room.participants.count + newcomers.count <= PersonalRoomStore.maximumMembers else { throw RoomError.tooManyMembers }
        guard try await store.friends(of: me, among: newcomers, c).count == newcomers.count else { throw RoomError.notFriend }
        try await store.add(newcomers, to: room.id, c)
        try await publish(try await self.room(id, me, c), .joined, by: me, added: newcomers, c)
    }

    /// A group's invitation code (valid a day; the same one while it lasts).
    func invitation(_ id: RoomID, by me: UserID, _ c: PostgresConnection) async throws -> String {
        let room = try await group(id, me, c)
        return try await store.invitation(room.id, by: me, validFor: Self.invitationSeconds, c)
    }

    /// Joins the group an invitation names.
    func join(code: String, _ me: UserID, _ c: PostgresConnection) async throws -> RoomRef {
        guard let id = try await store.room(invitation: code, c) else { throw RoomError.invalidInvitation }
        if try await store.room(id, member: me, lock: false, c) != nil { throw RoomError.alreadyMember }
        guard let members = try await store.memberCount(id, c), members < PersonalRoomStore.maximumMembers else { throw RoomError.tooManyMembers }
        try await store.add([me], to: id, c)
        let room = try await room(id, me, c)
        try await publish(room, .joined, by: me, added: [me], c)
        return room
    }

    /// `me` leaves (or closes) a room, or the owner removes `member` from a group. A group's
    /// owner who leaves hands it to the longest member; the last one out deletes it.
    func remove(_ member: UserID, from id: RoomID, by me: UserID, _ c: PostgresConnection) async throws -> RoomOutcome {
        let room = try await room(id, me, lock: true, c)
        guard room.group else {
            // A friends' room is only closed (hidden until its next message).
            guard member == me else { throw RoomError.noPermission }
            try await store.hide(room.id, for: me, c)
            return RoomOutcome(room: room)
        }
        guard member == me || room.ownerId == me else { throw RoomError.noPermission }
        guard room.participants.contains(member) else { throw RoomError.notMember }
        try await store.remove(member, from: room.id, c)
        var after = room
        after.participants.removeAll { $0 == member }
        guard let heir = after.participants.first else {
            let files = try await store.delete(room.id, c)
            after.ownerId = nil
            try await publish(after, .deleted, by: me, removed: [member], c)
            return RoomOutcome(room: nil, removedFiles: files + (room.icon.map { [$0] } ?? []))
        }
        if room.ownerId == member {
            after.ownerId = heir
            try await store.update(room.id, name: room.name, icon: room.icon, owner: heir, c)
        }
        try await publish(after, .left, by: me, removed: [member], c)
        return RoomOutcome(room: after)
    }

    /// Before a message is stored in a personal room: two users who banned each other may no
    /// longer write to each other; a closed room shows again.
    func admit(message room: RoomRef, from me: UserID, _ c: PostgresConnection) async throws {
        if !room.group, try await store.isBanned(me, room.other(than: me), c) { throw RoomError.banned }
        try await store.unhide(room.id, c)
    }

    private func group(_ id: RoomID, _ me: UserID, _ c: PostgresConnection) async throws -> RoomRef {
        let room = try await room(id, me, lock: true, c)
        guard room.group else { throw RoomError.notGroup }
        return room
    }

    private func publish(
        _ room: RoomRef, _ change: ChatEvents.RoomChanged.Change, by me: UserID, added: [UserID] = [], removed: [UserID] = [],
        _ c: PostgresConnection
    ) async throws {
        // Every room has an alias (the column's default); the event's schema requires it.
        guard let alias = room.alias else { throw ChatStoreError("room \(room.id) has no alias") }
        let event = ChatEvents.RoomChanged(
            roomId: room.id, alias: alias, change: change, actorId: me, group: room.group, name: room.name, icon: room.icon,
            ownerId: room.ownerId, members: change == .deleted ? [] : room.participants, added: added, removed: removed)
        try await Outbox.append(CloudEvent(source: ChatAPI.source, data: event), on: c, logger: logger)
    }

    private static func distinct(_ users: [UserID]) -> [UserID] {
        var seen: Set<UserID> = []
        return users.filter { seen.insert($0).inserted }
    }
}
