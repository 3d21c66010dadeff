import ClientContract
import Database
import Events
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import PostgresNIO
import ServiceKit

/// A friend as the viewer sees it. `state`: REQUEST = I asked and wait, WAIT = they asked and wait
/// for me, ACCEPT = friends, BAN = I banned them (Discord-style client, contract §2.1).
struct FriendResponse: ResponseEncodable, Sendable {
    var id: FriendshipID
    var user_id: UserID
    var name: String
    var code: String
    var profileImage: String?
    var state: String
}

struct MyTag: ResponseEncodable, Sendable {
    var user_id: UserID
    var name: String
    var code: String
}

struct FriendRequestBody: Decodable {
    var name: String?
    var code: String?
}

/// `/v1/friends`: request by `name#code`, accept, ban, refuse or delete, list (the rules are
/// `FriendBook`'s, shared with Smooth's `/auth-server/auth/friend`).
struct FriendRoutes: Sendable {
    let postgres: PostgresClient
    let logger: Logger

    var book: FriendBook { FriendBook(postgres: postgres, logger: logger) }

    func add(to router: some RouterMethods<SuiteRequestContext>) {
        router.group("v1/friends", context: AuthenticatedContext.self).addRoutes(routes)
    }

    var routes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("me") { _, context -> MyTag in
            let me = context.identity
            for try await (name, code) in try await postgres.liveQuery("SELECT nickname, user_code FROM users WHERE id = \(me.uuid)", logger: logger)
                .decode((String, String).self)
            {
                return MyTag(user_id: me, name: name, code: code)
            }
            throw APIError.unknownAccount
        }
        routes.get { _, context -> [FriendResponse] in try await book.list(for: context.identity).map(FriendResponse.init) }
        routes.post { request, context -> FriendResponse in
            let body = try await request.decodeBody(as: FriendRequestBody.self, context: context)
            guard let (name, code) = FriendBook.tag(name: body.name, code: body.code) else {
                throw APIError.badRequest("name and a 4-digit code are required")
            }
            return try await entry(try await book.request(from: context.identity, name: name, code: code), for: context.identity)
        }
        routes.patch(":id") { _, context -> FriendResponse in
            let id = try friendshipId(context)
            _ = try await book.change(id, by: context.identity, to: .accepted)
            return try await entry(id, for: context.identity)
        }
        routes.patch(":id/ban") { _, context -> FriendResponse in
            let id = try friendshipId(context)
            _ = try await book.change(id, by: context.identity, to: .banned)
            return try await entry(id, for: context.identity)
        }
        routes.delete(":id") { _, context -> HTTPResponse.Status in
            _ = try await book.change(try friendshipId(context), by: context.identity, to: .removed)
            return .ok
        }
        return routes
    }

    private func friendshipId(_ context: AuthenticatedContext) throws -> UUID {
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else { throw APIError.notFound("friendship") }
        return id
    }

    /// The friendship as `me` now sees it.
    private func entry(_ id: UUID, for me: UserID) async throws -> FriendResponse {
        guard let entry = try await book.list(for: me).first(where: { $0.id == id }) else { throw APIError.notFound("friendship") }
        return FriendResponse(entry)
    }
}

extension FriendResponse {
    init(_ entry: FriendBook.Entry) {
        self.init(
            id: FriendshipID(entry.id), user_id: UserID(entry.user), name: entry.name, code: entry.code, profileImage: entry.profileImage,
            state: entry.state.rawValue)
    }
}

/// The friendship rules, whatever the surface: one relationship per pair; a request by
/// `name#code`; only the invited side accepts; a request back accepts theirs; a ban hides the
/// relationship from the banned side; either side (the banner only, once banned) deletes it.
/// Every change publishes `FriendshipChanged` to both sides in the same transaction.
struct FriendBook: Sendable {
    let postgres: PostgresClient
    let logger: Logger

    /// How the viewer sees a friendship (Smooth's `FriendState`).
    enum State: String, Sendable {
        /// They asked; I have not answered.
        case wait = "WAIT"
        /// I asked; they have not answered.
        case request = "REQUEST"
        case accept = "ACCEPT"
        /// I banned them (the banned side no longer sees the friendship).
        case ban = "BAN"
    }

    /// A friendship as the viewer sees it: the friendship, the other user, the state.
    struct Entry: Sendable {
        var id: UUID
        var alias: Int64
        var user: UUID
        var userAlias: Int64
        var name: String
        var code: String
        var profileImage: String?
        var state: State
    }

    private struct Row {
        var id: UUID
        var requester: UUID
        var addressee: UUID
        var accepted: Bool
        var bannedBy: UUID?
    }

    /// A `name#code` tag from a request body: `name` within the nickname limits, `code` four
    /// ASCII digits; nil otherwise.
    static func tag(name: String?, code: String?) -> (name: String, code: String)? {
        guard let name = name?.trimmingCharacters(in: .whitespaces), !name.isEmpty, Validation.nicknameLimit.allows(name),
            let code = code?.trimmingCharacters(in: .whitespaces), code.utf8.count == 4, code.utf8.allSatisfy({ (0x30...0x39).contains($0) })
        else { return nil }
        return (name, code)
    }

    /// The friendship a legacy client's integer id names (nil for none; whether the caller may
    /// see it is `change`'s business).
    func friendship(alias: Int64) async throws -> UUID? {
        for try await id in try await postgres.liveQuery("SELECT id FROM friendships WHERE alias = \(alias)", logger: logger).decode(UUID.self) {
            return id
        }
        return nil
    }

    /// Asks `name#code` to be friends; returns the friendship. A pending request from them is
    /// accepted instead. E13 no such user (or one who banned me), E12 already related or the tag
    /// is ambiguous, E11 myself.
    func request(from me: UserID, name: String, code: String) async throws -> UUID {
        do {
            return try await insertRequest(from: me, name: name, code: code)
        } catch let error where error.isUniqueViolation {
            // Both asked each other at the same moment: the pair index let one insert through.
            throw APIError.duplicate("already requested or friends")
        }
    }

    private func insertRequest(from me: UserID, name: String, code: String) async throws -> UUID {
        try await postgres.withLiveTransaction(logger: logger) { connection -> UUID in
            var targets: [UUID] = []
            for try await target in try await connection.query(
                "SELECT id FROM users WHERE lower(nickname) = lower(\(name)) AND user_code = \(code)", logger: logger
            ).decode(UUID.self) { targets.append(target) }
            guard let target = targets.first else { throw APIError.notFound("no user \(name)#\(code)") }
            guard targets.count == 1 else { throw APIError.duplicate("\(name)#\(code) is ambiguous") }
            guard target != me.uuid else { throw APIError.badRequest("cannot befriend yourself") }
            // An existing relationship either way: a pending request from them is accepted;
            // anything else is a duplicate (or hidden by a ban).
            if let existing = try await row(between: me.uuid, target, on: connection) {
                if existing.bannedBy != nil { throw APIError.notFound("no user \(name)#\(code)") }
                if !existing.accepted, existing.requester == target {
                    try await setAccepted(existing.id, on: connection)
                    try await publish(existing.id, me.uuid, target, .accepted, on: connection)
                    return existing.id
                }
                throw APIError.duplicate("already requested or friends")
            }
            let id = UUIDv7.generate()
            _ = try await connection.query(
                "INSERT INTO friendships (id, requester_id, addressee_id) VALUES (\(id), \(me.uuid), \(target))", logger: logger
            )
            try await publish(id, me.uuid, target, .requested, on: connection)
            return id
        }
    }

    /// Accepts, bans or removes a friendship of `me`; returns the other user. E13 when it is not
    /// `me`'s (or `me` is the banned side), E14 accepting one's own request or an accepted one.
    @discardableResult
    func change(_ id: UUID, by me: UserID, to state: AuthEvents.FriendshipChanged.State) async throws -> UUID {
        try await postgres.withLiveTransaction(logger: logger) { connection -> UUID in
            var found: Row?
            for try await (fid, requester, addressee, accepted, bannedBy) in try await connection.query(
                """
                SELECT id, requester_id, addressee_id, accepted, banned_by FROM friendships
                WHERE id = \(id) AND (requester_id = \(me.uuid) OR addressee_id = \(me.uuid)) FOR UPDATE
                """, logger: logger
            ).decode((UUID, UUID, UUID, Bool, UUID?).self) {
                found = Row(id: fid, requester: requester, addressee: addressee, accepted: accepted, bannedBy: bannedBy)
            }
            guard let row = found, row.bannedBy == nil || row.bannedBy == me.uuid else { throw APIError.notFound("friendship") }
            let other = row.requester == me.uuid ? row.addressee : row.requester
            switch state {
            case .accepted:
                guard !row.accepted, row.addressee == me.uuid, row.bannedBy == nil else {
                    throw APIError.forbidden("only the invited user accepts a pending request")
                }
                try await setAccepted(id, on: connection)
            case .banned:
                _ = try await connection.query("UPDATE friendships SET banned_by = \(me.uuid), accepted = false WHERE id = \(id)", logger: logger)
            case .removed:
                _ = try await connection.query("DELETE FROM friendships WHERE id = \(id)", logger: logger)
            case .requested:
                throw APIError.badRequest("not a transition")
            }
            try await publish(id, me.uuid, other, state, on: connection)
            return other
        }
    }

    /// `me`'s friendships, oldest first; a ban shows only to the banner.
    func list(for me: UserID) async throws -> [Entry] {
        var out: [Entry] = []
        let rows = try await postgres.liveQuery(
            """
            SELECT f.id, f.alias, u.id, u.alias, u.nickname, u.user_code, u.profile_image, f.requester_id = \(me.uuid), f.accepted, f.banned_by
            FROM friendships f JOIN users u ON u.id = CASE WHEN f.requester_id = \(me.uuid) THEN f.addressee_id ELSE f.requester_id END
            WHERE (f.requester_id = \(me.uuid) OR f.addressee_id = \(me.uuid)) AND (f.banned_by IS NULL OR f.banned_by = \(me.uuid))
            ORDER BY f.created_at, f.id
            """, logger: logger)
        for try await (id, alias, user, userAlias, name, code, image, iAsked, accepted, bannedBy) in rows.decode(
            (UUID, Int64, UUID, Int64, String, String, String?, Bool, Bool, UUID?).self)
        {
            let state: State = bannedBy != nil ? .ban : accepted ? .accept : iAsked ? .request : .wait
            out.append(Entry(id: id, alias: alias, user: user, userAlias: userAlias, name: name, code: code, profileImage: image, state: state))
        }
        return out
    }

    private func row(between a: UUID, _ b: UUID, on connection: PostgresConnection) async throws -> Row? {
        for try await (id, requester, addressee, accepted, bannedBy) in try await connection.query(
            """
            SELECT id, requester_id, addressee_id, accepted, banned_by FROM friendships
            WHERE LEAST(requester_id, addressee_id) = LEAST(\(a), \(b)) AND GREATEST(requester_id, addressee_id) = GREATEST(\(a), \(b))
            FOR UPDATE
            """, logger: logger
        ).decode((UUID, UUID, UUID, Bool, UUID?).self) {
            return Row(id: id, requester: requester, addressee: addressee, accepted: accepted, bannedBy: bannedBy)
        }
        return nil
    }

    private func setAccepted(_ id: UUID, on connection: PostgresConnection) async throws {
        _ = try await connection.query("UPDATE friendships SET accepted = true WHERE id = \(id)", logger: logger)
    }

    /// One event per side, keyed by that side's user id.
    private func publish(_ id: UUID, _ a: UUID, _ b: UUID, _ state: AuthEvents.FriendshipChanged.State, on connection: PostgresConnection) async throws {
        for (user, friend) in [(a, b), (b, a)] {
            let event = AuthEvents.FriendshipChanged(userId: UserID(user), friendId: UserID(friend), friendshipId: FriendshipID(id), state: state)
            try await Outbox.append(CloudEvent(source: AccountRoutes.source, data: event), on: connection, logger: logger)
        }
    }
}
