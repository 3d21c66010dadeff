import Database
import Events
import Foundation
import Logging
import PostgresNIO

struct UserRecord: Sendable {
    var id: UserID
    var email: String
    var passwordHash: String?
    var nickname: String
    var phone: String?
    var profileImage: String?
    var provider: String?
    var createdAt: Date
    /// The integer id legacy clients (Smooth) know the user by (`Database.IntegerAlias`).
    var alias: Int64
    /// The four-digit tag of `name#code`.
    var code: String
    /// Smooth's profile text (at most 190 characters).
    var bio: String?
}

/// The users aggregate's SQL (all parameters bound).
struct UserStore: Sendable {
    let postgres: PostgresClient
    let logger: Logger

    private static let columns = "id, email, password_hash, nickname, phone, profile_image, provider, created_at, alias, user_code, bio"
    private static let userColumns =
        "u.id, u.email, u.password_hash, u.nickname, u.phone, u.profile_image, u.provider, u.created_at, u.alias, u.user_code, u.bio"

    private static func decode(_ rows: some AsyncSequence<PostgresRow, any Error>) async throws -> UserRecord? {
        for try await (id, email, hash, nickname, phone, image, provider, createdAt, alias, code, bio) in rows.decode(
            (UUID, String, String?, String, String?, String?, String?, Date, Int64, String, String?).self
        ) {
            return UserRecord(
                id: UserID(id), email: email, passwordHash: hash, nickname: nickname, phone: phone,
                profileImage: image, provider: provider, createdAt: createdAt, alias: alias, code: code, bio: bio)
        }
        return nil
    }

    private static func decodeAll(_ rows: some AsyncSequence<PostgresRow, any Error>) async throws -> [UserRecord] {
        var users: [UserRecord] = []
        for try await (id, email, hash, nickname, phone, image, provider, createdAt, alias, code, bio) in rows.decode(
            (UUID, String, String?, String, String?, String?, String?, Date, Int64, String, String?).self
        ) {
            users.append(
                UserRecord(
                    id: UserID(id), email: email, passwordHash: hash, nickname: nickname, phone: phone,
                    profileImage: image, provider: provider, createdAt: createdAt, alias: alias, code: code, bio: bio))
        }
        return users
    }

    /// Up to `limit` users whose alias no event carried yet, locked (others' locked rows skipped,
    /// so replicas share the work); marked announced in the caller's transaction.
    func takeUnannouncedAliases(limit: Int, on connection: PostgresConnection) async throws -> [UserRecord] {
        let users = try await Self.decodeAll(
            connection.query(
                """
                SELECT \(unescaped: Self.columns) FROM users WHERE NOT alias_announced ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED
                """, logger: logger))
        if !users.isEmpty {
            _ = try await connection.query("UPDATE users SET alias_announced = true WHERE id = ANY(\(users.map(\.id.uuid)))", logger: logger)
        }
        return users
    }

    func emailExists(_ email: String) async throws -> Bool {
        for try await _ in try await postgres.liveQuery("SELECT 1 FROM users WHERE lower(email) = lower(\(email))", logger: logger) { return true }
        return false
    }

    func find(email: String) async throws -> UserRecord? {
        try await Self.decode(
            postgres.liveQuery(
                "SELECT \(unescaped: Self.columns) FROM users WHERE lower(email) = lower(\(email))", logger: logger
            ))
    }

    func find(id: UserID) async throws -> UserRecord? {
        try await Self.decode(postgres.liveQuery("SELECT \(unescaped: Self.columns) FROM users WHERE id = \(id.uuid)", logger: logger))
    }

    /// The user a legacy client's integer id names.
    func find(alias: Int64) async throws -> UserRecord? {
        try await Self.decode(postgres.liveQuery("SELECT \(unescaped: Self.columns) FROM users WHERE alias = \(alias)", logger: logger))
    }

    /// A four-digit tag no user of that nickname (case-insensitively) has yet, picked at random
    /// among the free ones; nil when all 10 000 are taken. Best effort (two concurrent sign-ups
    /// of one name may still draw the same tag; a friend request to it then reads as ambiguous).
    func freeCode(for nickname: String) async throws -> String? {
        for try await code in try await postgres.liveQuery(
            """
            SELECT c.code FROM (SELECT lpad(n::text, 4, '0') AS code FROM generate_series(0, 9999) n) c
            WHERE NOT EXISTS (SELECT 1 FROM users u WHERE lower(u.nickname) = lower(\(nickname)) AND u.user_code = c.code)
            ORDER BY random() LIMIT 1
            """, logger: logger
        ).decode(String.self) {
            return code
        }
        return nil
    }

    /// Inserts the user; nil when the email is taken (unique index, not a pre-check race).
    /// - Parameter code: the `name#code` tag; random when nil.
    func insert(
        id: UserID, email: String, passwordHash: String?, nickname: String, phone: String?, provider: String?, code: String? = nil,
        on connection: PostgresConnection
    ) async throws -> UserRecord? {
        let code = code ?? String(format: "%04d", Int.random(in: 0...9999))
        return try await Self.decode(
            connection.query(
                """
                INSERT INTO users (id, email, password_hash, nickname, phone, provider, user_code)
                VALUES (\(id.uuid), \(email), \(passwordHash), \(nickname), \(phone), \(provider), \(code))
                ON CONFLICT DO NOTHING
                RETURNING \(unescaped: Self.columns)
                """, logger: logger))
    }

    func find(provider: String, subject: String) async throws -> UserRecord? {
        try await Self.decode(
            postgres.liveQuery(
                """
                SELECT \(unescaped: Self.userColumns) FROM users u JOIN social_identities s ON s.user_id = u.id
                WHERE s.provider = \(provider) AND s.subject = \(subject)
                """, logger: logger))
    }

    /// Links a provider identity to a user; false when the identity is already linked.
    func link(provider: String, subject: String, to id: UserID, on connection: PostgresConnection) async throws -> Bool {
        for try await _ in try await connection.query(
            """
            INSERT INTO social_identities (provider, subject, user_id) VALUES (\(provider), \(subject), \(id.uuid))
            ON CONFLICT DO NOTHING RETURNING 1
            """, logger: logger)
        {
            return true
        }
        return false
    }

    func updateProfile(id: UserID, nickname: String, phone: String?, on connection: PostgresConnection) async throws -> UserRecord? {
        try await Self.decode(
            connection.query(
                """
                UPDATE users SET nickname = \(nickname), phone = \(phone), updated_at = date_trunc('milliseconds', clock_timestamp())
                WHERE id = \(id.uuid)
                RETURNING \(unescaped: Self.columns)
                """, logger: logger))
    }

    /// Sets (or, with nil, clears) Smooth's profile text.
    func updateBio(id: UserID, bio: String?) async throws -> Bool {
        for try await _ in try await postgres.liveQuery(
            """
            UPDATE users SET bio = \(bio), updated_at = date_trunc('milliseconds', clock_timestamp()) WHERE id = \(id.uuid) RETURNING 1
            """, logger: logger)
        {
            return true
        }
        return false
    }

    /// Sets the profile image; returns the updated user and the previous image path.
    func updateImage(id: UserID, path: String, on connection: PostgresConnection) async throws -> (UserRecord, String?)? {
        var previous: String?
        for try await old in try await connection.query("SELECT profile_image FROM users WHERE id = \(id.uuid) FOR UPDATE", logger: logger)
            .decode(String?.self)
        {
            previous = old
        }
        guard
            let user = try await Self.decode(
                connection.query(
                    """
                    UPDATE users SET profile_image = \(path), updated_at = date_trunc('milliseconds', clock_timestamp())
                    WHERE id = \(id.uuid) RETURNING \(unescaped: Self.columns)
                    """, logger: logger))
        else { return nil }
        return (user, previous)
    }

    func coinBalance(id: UserID) async throws -> Int {
        for try await balance in try await postgres.liveQuery("SELECT balance FROM coin_balances WHERE user_id = \(id.uuid)", logger: logger)
            .decode(Int64.self)
        {
            return Int(balance)
        }
        return 0
    }

    /// Gives `token` to the user (in the caller's transaction): the previous owner, if another
    /// user, loses it. Returns whether the user did not have it yet, and the user it was taken from.
    func claimDeviceToken(_ token: String, for id: UserID, on connection: PostgresConnection) async throws -> (added: Bool, previousOwner: UserID?) {
        var previous: UUID?
        // Locks the token's row, so two claims of one token run one after the other.
        for try await owner in try await connection.query("SELECT user_id FROM device_tokens WHERE token = \(token) FOR UPDATE", logger: logger)
            .decode(UUID.self)
        {
            previous = owner
        }
        _ = try await connection.query(
            """
            INSERT INTO device_tokens (user_id, token) VALUES (\(id.uuid), \(token))
            ON CONFLICT (token) DO UPDATE SET user_id = EXCLUDED.user_id, updated_at = now()
            """, logger: logger)
        guard let previous else { return (true, nil) }
        return previous == id.uuid ? (false, nil) : (true, UserID(previous))
    }

    /// Keeps the user's `limit` most recently registered tokens (in the caller's transaction);
    /// returns the ones dropped, so a client cannot grow the table (and push's fan-out) without bound.
    func trimDeviceTokens(for id: UserID, keeping limit: Int, on connection: PostgresConnection) async throws -> [String] {
        var dropped: [String] = []
        let rows = try await connection.query(
            """
            DELETE FROM device_tokens WHERE user_id = \(id.uuid) AND token IN (
                SELECT token FROM device_tokens WHERE user_id = \(id.uuid) ORDER BY updated_at DESC, token OFFSET \(limit))
            RETURNING token
            """, logger: logger)
        for try await token in rows.decode(String.self) { dropped.append(token) }
        return dropped.sorted()
    }

    /// Removes every device token of the user (in the caller's transaction); returns them.
    func removeDeviceTokens(for id: UserID, on connection: PostgresConnection) async throws -> [String] {
        var removed: [String] = []
        for try await token in try await connection.query("DELETE FROM device_tokens WHERE user_id = \(id.uuid) RETURNING token", logger: logger)
            .decode(String.self)
        {
            removed.append(token)
        }
        return removed.sorted()
    }

    // MARK: refresh tokens (stored as SHA-256 hashes)

    func storeRefreshToken(hash: [UInt8], userId: UserID, expiresAt: Date) async throws {
        _ = try await postgres.liveQuery(
            """
            INSERT INTO refresh_tokens (token_hash, user_id, expires_at) VALUES (\(ByteBuffer(bytes: hash)), \(userId.uuid), \(expiresAt))
            """, logger: logger)
    }

    /// True when the token is this user's, not revoked and not expired.
    func refreshTokenIsValid(hash: [UInt8], userId: UserID) async throws -> Bool {
        for try await _ in try await postgres.liveQuery(
            """
            SELECT 1 FROM refresh_tokens
            WHERE token_hash = \(ByteBuffer(bytes: hash)) AND user_id = \(userId.uuid) AND revoked_at IS NULL AND expires_at > now()
            """, logger: logger)
        {
            return true
        }
        return false
    }

    /// The user of an unrevoked, unexpired refresh token.
    func refreshTokenOwner(hash: [UInt8]) async throws -> UserID? {
        for try await id in try await postgres.liveQuery(
            """
            SELECT user_id FROM refresh_tokens WHERE token_hash = \(ByteBuffer(bytes: hash)) AND revoked_at IS NULL AND expires_at > now()
            """, logger: logger
        ).decode(UUID.self) {
            return UserID(id)
        }
        return nil
    }

    func revokeRefreshTokens(for id: UserID) async throws {
        _ = try await postgres.liveQuery("UPDATE refresh_tokens SET revoked_at = now() WHERE user_id = \(id.uuid) AND revoked_at IS NULL", logger: logger)
    }
}
