import Database
import Events
import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// SQL of personal rooms: rooms outside workspaces, between friends (one per pair) or a group
/// (a name, an icon, an owner, up to `maximumMembers`). Members are in `room_members`; friendships
/// come from auth's events (`FriendProjection`). Callers lock the room (`lock: true`) before they
/// change it, so concurrent joins, leaves and sends serialise on the room's row.
struct PersonalRoomStore: Sendable {
    let logger: Logger

    /// Most members a group may have (Discord's group DMs hold 10).
    static let maximumMembers = 10

    private static let columns = """
        r.id, r.alias, r.is_group, r.name, r.icon, r.owner_id, r.created_at,
        array(SELECT m.user_id FROM room_members m WHERE m.room_id = r.id ORDER BY m.joined_at, m.user_id)
        """

    private func rooms(_ rows: PostgresRowSequence) async throws -> [RoomRef] {
        var result: [RoomRef] = []
        for try await (id, alias, group, name, icon, owner, createdAt, members) in rows.decode(
            (UUID, Int64, Bool, String?, String?, UUID?, Date, [UUID]).self)
        {
            result.append(
                RoomRef(
                    id: RoomID(id), workspaceId: nil, participants: members.map(UserID.init), createdAt: createdAt, alias: alias, group: group,
                    name: name, icon: icon, ownerId: owner.map(UserID.init)))
        }
        return result
    }

    /// The personal room when `user` is one of its members; locked for the transaction when `lock`.
    func room(_ id: RoomID, member user: UserID, lock: Bool, _ c: PostgresConnection) async throws -> RoomRef? {
        try await rooms(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM dm_rooms r
                WHERE r.id = \(id.uuid) AND r.workspace_id IS NULL
                  AND EXISTS (SELECT 1 FROM room_members m WHERE m.room_id = r.id AND m.user_id = \(user.uuid))
                \(unescaped: lock ? "FOR NO KEY UPDATE OF r" : "")
                """, logger: logger)
        ).first
    }

    /// The personal room, whoever asks.
    func room(_ id: RoomID, _ c: PostgresConnection) async throws -> RoomRef? {
        try await rooms(c.query("SELECT \(unescaped: Self.columns) FROM dm_rooms r WHERE r.id = \(id.uuid) AND r.workspace_id IS NULL", logger: logger))
            .first
    }

    /// The personal room with integer alias `alias` when `user` is one of its members.
    func room(alias: Int64, member user: UserID, _ c: PostgresConnection) async throws -> RoomRef? {
        for try await id in try await c.query("SELECT id FROM dm_rooms WHERE alias = \(alias) AND workspace_id IS NULL", logger: logger).decode(UUID.self) {
            return try await room(RoomID(id), member: user, lock: false, c)
        }
        return nil
    }

    /// Whether `path` is a group's icon (only those are served without a token).
    func isIcon(_ path: String, _ postgres: PostgresClient) async throws -> Bool {
        for try await _ in try await postgres.liveQuery("SELECT 1 FROM dm_rooms WHERE icon = \(path) LIMIT 1", logger: logger) { return true }
        return false
    }

    /// `user`'s personal rooms (not the friends' rooms they closed), the latest activity first.
    func rooms(of user: UserID, _ c: PostgresConnection) async throws -> [RoomRef] {
        try await rooms(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM dm_rooms r JOIN room_members me ON me.room_id = r.id AND me.user_id = \(user.uuid)
                WHERE r.workspace_id IS NULL AND NOT me.hidden
                ORDER BY greatest(r.last_message_at, r.created_at) DESC, r.id
                """, logger: logger))
    }

    /// Those of `ids` that are personal rooms `user` is a member of (hidden or not).
    func rooms(of user: UserID, including ids: [UUID], _ c: PostgresConnection) async throws -> [RoomRef] {
        guard !ids.isEmpty else { return [] }
        return try await rooms(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM dm_rooms r JOIN room_members me ON me.room_id = r.id AND me.user_id = \(user.uuid)
                WHERE r.workspace_id IS NULL AND r.id = ANY(\(ids))
                """, logger: logger))
    }

    /// `user`'s personal rooms with messages from others after their read cursor, with how many,
    /// the latest message first (Smooth's home screen).
    func unread(of user: UserID, _ c: PostgresConnection) async throws -> [(room: RoomRef, count: Int)] {
        var counts: [(UUID, Int)] = []
        for try await (id, count) in try await c.query(
            """
            SELECT r.id, count(m.id) FROM room_members me JOIN dm_rooms r ON r.id = me.room_id AND r.workspace_id IS NULL
            LEFT JOIN read_cursors rc ON rc.user_id = me.user_id AND rc.conversation_id = r.id
            JOIN messages m ON m.conversation_id = r.id AND m.created_at > coalesce(rc.read_at, '-infinity')
                AND m.sender_id <> me.user_id AND m.deleted_at IS NULL
            WHERE me.user_id = \(user.uuid)
            GROUP BY r.id ORDER BY max(m.created_at) DESC
            """, logger: logger
        ).decode((UUID, Int64).self) {
            counts.append((id, Int(count)))
        }
        var result: [(room: RoomRef, count: Int)] = []
        for (id, count) in counts {
            if let room = try await room(RoomID(id), c) { result.append((room, count)) }
        }
        return result
    }

    /// Which of `users` are `user`'s accepted friends (per auth's events).
    func friends(of user: UserID, among users: [UserID], _ c: PostgresConnection) async throws -> Set<UserID> {
        var result: Set<UserID> = []
        for try await id in try await c.query(
            """
            SELECT friend_id FROM friendships WHERE user_id = \(user.uuid) AND friend_id = ANY(\(users.map(\.uuid))::uuid[]) AND state = 'accepted'
            """, logger: logger
        ).decode(UUID.self) {
            result.insert(UserID(id))
        }
        return result
    }

    /// Whether either of the two banned the other.
    func isBanned(_ a: UserID, _ b: UserID, _ c: PostgresConnection) async throws -> Bool {
        for try await _ in try await c.query(
            """
            SELECT 1 FROM friendships WHERE state = 'banned'
              AND ((user_id = \(a.uuid) AND friend_id = \(b.uuid)) OR (user_id = \(b.uuid) AND friend_id = \(a.uuid)))
            """, logger: logger)
        {
            return true
        }
        return false
    }

    /// The friends' room of `a` and `b`, created when missing (concurrent calls agree: the unique
    /// pair decides), and shown again in `a`'s list; `created` tells whether this call made it.
    func friendsRoom(_ a: UserID, _ b: UserID, _ c: PostgresConnection) async throws -> (room: RoomRef, created: Bool) {
        let (low, high) = a.uuid.lowercased <= b.uuid.lowercased ? (a, b) : (b, a)
        var created = false
        for try await id in try await c.query(
            """
            INSERT INTO dm_rooms (id, user_low, user_high) VALUES (\(RoomID.generate().uuid), \(low.uuid), \(high.uuid))
            ON CONFLICT (user_low, user_high) WHERE workspace_id IS NULL AND NOT is_group DO NOTHING RETURNING id
            """, logger: logger
        ).decode(UUID.self) {
            created = true
            _ = try await c.query(
                "INSERT INTO room_members (room_id, user_id) SELECT \(id), unnest(\([low.uuid, high.uuid])::uuid[]) ON CONFLICT DO NOTHING",
                logger: logger)
        }
        guard
            let id = try await c.query(
                "SELECT id FROM dm_rooms WHERE workspace_id IS NULL AND NOT is_group AND user_low = \(low.uuid) AND user_high = \(high.uuid)",
                logger: logger
            ).decode(UUID.self).first(where: { _ in true })
        else { throw ChatStoreError("friends' room vanished after insert") }
        _ = try await c.query("UPDATE room_members SET hidden = false WHERE room_id = \(id) AND user_id = \(a.uuid) AND hidden", logger: logger)
        guard let room = try await room(RoomID(id), member: a, lock: true, c) else { throw ChatStoreError("friends' room without its member") }
        return (room, created)
    }

    /// A new group owned by `owner` with `members` (the owner first).
    func createGroup(owner: UserID, members: [UserID], name: String, _ c: PostgresConnection) async throws -> RoomRef {
        let id = RoomID.generate()
        _ = try await c.query(
            "INSERT INTO dm_rooms (id, is_group, name, owner_id) VALUES (\(id.uuid), true, \(name), \(owner.uuid))", logger: logger)
        try await add([owner] + members, to: id, c)
        guard let room = try await room(id, member: owner, lock: true, c) else { throw ChatStoreError("group vanished after insert") }
        return room
    }

    /// Adds members (in order, a millisecond apart, so the joining order is stable).
    func add(_ users: [UserID], to room: RoomID, _ c: PostgresConnection) async throws {
        _ = try await c.query(
            """
            INSERT INTO room_members (room_id, user_id, joined_at)
            SELECT \(room.uuid), u, clock_timestamp() + n * interval '1 millisecond' FROM unnest(\(users.map(\.uuid))::uuid[]) WITH ORDINALITY AS t(u, n)
            ON CONFLICT DO NOTHING
            """, logger: logger)
    }

    func remove(_ user: UserID, from room: RoomID, _ c: PostgresConnection) async throws {
        _ = try await c.query("DELETE FROM room_members WHERE room_id = \(room.uuid) AND user_id = \(user.uuid)", logger: logger)
    }

    /// How many members the room has; nil when it does not exist.
    func memberCount(_ room: RoomID, _ c: PostgresConnection) async throws -> Int? {
        for try await count in try await c.query(
            "SELECT (SELECT count(*) FROM room_members m WHERE m.room_id = r.id) FROM dm_rooms r WHERE r.id = \(room.uuid)", logger: logger
        ).decode(Int64.self) {
            return Int(count)
        }
        return nil
    }

    /// Hides a friends' room from `user`'s list (closing a DM: it comes back with the next message).
    func hide(_ room: RoomID, for user: UserID, _ c: PostgresConnection) async throws {
        _ = try await c.query("UPDATE room_members SET hidden = true WHERE room_id = \(room.uuid) AND user_id = \(user.uuid)", logger: logger)
    }

    /// A new message shows the room again to every member who had closed it.
    func unhide(_ room: RoomID, _ c: PostgresConnection) async throws {
        _ = try await c.query("UPDATE room_members SET hidden = false WHERE room_id = \(room.uuid) AND hidden", logger: logger)
    }

    func update(_ room: RoomID, name: String?, icon: String?, owner: UserID?, _ c: PostgresConnection) async throws {
        _ = try await c.query(
            "UPDATE dm_rooms SET name = \(name), icon = \(icon), owner_id = \(owner?.uuid) WHERE id = \(room.uuid)", logger: logger)
    }

    /// Deletes the room and its messages; returns the messages' files (to remove from the volume
    /// after the commit).
    func delete(_ room: RoomID, _ c: PostgresConnection) async throws -> [String] {
        var files: [String] = []
        for try await paths in try await c.query(
            "DELETE FROM messages WHERE conversation_id = \(room.uuid) AND files <> '{}' RETURNING files", logger: logger
        ).decode([String].self) {
            files += paths
        }
        _ = try await c.query("DELETE FROM messages WHERE conversation_id = \(room.uuid)", logger: logger)
        _ = try await c.query("DELETE FROM read_cursors WHERE conversation_id = \(room.uuid)", logger: logger)
        _ = try await c.query("DELETE FROM dm_rooms WHERE id = \(room.uuid)", logger: logger)
        return files
    }

    /// A valid invitation of the room (one a day: an unexpired one is given again).
    func invitation(_ room: RoomID, by user: UserID, validFor seconds: Int, _ c: PostgresConnection) async throws -> String {
        for try await code in try await c.query(
            "SELECT code FROM room_invitations WHERE room_id = \(room.uuid) AND expires_at > now() ORDER BY expires_at DESC LIMIT 1", logger: logger
        ).decode(String.self) {
            return code
        }
        let code = InviteCode.generate()
        _ = try await c.query(
            """
            INSERT INTO room_invitations (code, room_id, created_by, expires_at)
            VALUES (\(code), \(room.uuid), \(user.uuid), now() + \(Double(seconds)) * interval '1 second')
            """, logger: logger)
        return code
    }

    /// The room an unexpired invitation code opens, locked.
    func room(invitation code: String, _ c: PostgresConnection) async throws -> RoomID? {
        for try await id in try await c.query(
            """
            SELECT r.id FROM room_invitations i JOIN dm_rooms r ON r.id = i.room_id
            WHERE i.code = \(code) AND i.expires_at > now() FOR NO KEY UPDATE OF r
            """, logger: logger
        ).decode(UUID.self) {
            return RoomID(id)
        }
        return nil
    }
}

/// A member as room answers show them: profile (from auth's events) and presence.
struct RoomMemberProfile: Sendable {
    var userId: UserID
    var alias: Int64?
    var nickname: String
    var code: String?
    var profileImage: String?
    var online: Bool
}

extension PersonalRoomStore {
    /// Profiles of `users`, in that order (a user whose profile has not arrived shows an empty name).
    func profiles(_ users: [UserID], _ c: PostgresConnection) async throws -> [RoomMemberProfile] {
        var found: [UserID: RoomMemberProfile] = [:]
        for try await (id, alias, nickname, code, image, online) in try await c.query(
            """
            SELECT u, p.alias, coalesce(p.nickname, ''), p.user_code, p.profile_image, coalesce(s.online, false)
            FROM unnest(\(users.map(\.uuid))::uuid[]) AS t(u) LEFT JOIN user_profiles p ON p.user_id = u LEFT JOIN presence s ON s.user_id = u
            """, logger: logger
        ).decode((UUID, Int64?, String, String?, String?, Bool).self) {
            found[UserID(id)] = RoomMemberProfile(userId: UserID(id), alias: alias, nickname: nickname, code: code, profileImage: image, online: online)
        }
        return users.compactMap { found[$0] }
    }

    /// The users legacy clients name by integer aliases (unknown aliases are left out).
    func users(aliases: [Int64], _ c: PostgresConnection) async throws -> [Int64: UserID] {
        var result: [Int64: UserID] = [:]
        for try await (alias, id) in try await c.query(
            "SELECT alias, user_id FROM user_profiles WHERE alias = ANY(\(aliases)::int8[]) AND NOT deleted", logger: logger
        ).decode((Int64, UUID).self) {
            result[alias] = UserID(id)
        }
        return result
    }
}
