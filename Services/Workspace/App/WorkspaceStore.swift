import Events
import Foundation
import Database
import Logging
import PostgresNIO

/// SQL of the workspace aggregate: workspaces, their members and the member-profile projection.
/// Every query is parameterised; every mutation runs on a connection inside a transaction that
/// first locked the workspace row (`lock`), which serialises changes per workspace.
struct WorkspaceStore: Sendable {
    let logger: Logger

    static let columns = "w.id, w.name, w.description, w.cover_image, w.owner_id, w.created_at, w.alias"

    func workspaces(_ rows: PostgresRowSequence) async throws -> [WorkspaceRecord] {
        var result: [WorkspaceRecord] = []
        for try await (id, name, description, cover, owner, createdAt, alias) in rows.decode(
            (UUID, String, String?, String?, UUID, Date, Int64).self
        ) {
            result.append(
                WorkspaceRecord(
                    id: WorkspaceID(id), name: name, description: description, coverImage: cover,
                    ownerId: UserID(owner), createdAt: createdAt, alias: alias))
        }
        return result
    }

    static func members(_ rows: PostgresRowSequence) async throws -> [MemberRecord] {
        var result: [MemberRecord] = []
        for try await (id, email, nickname, image) in rows.decode((UUID, String, String, String?).self) {
            result.append(MemberRecord(userId: UserID(id), email: email, nickname: nickname, profileImage: image))
        }
        return result
    }

    /// Member columns from the profile projection; a member whose profile event has not arrived
    /// yet is listed with empty strings rather than left out.
    static let memberColumns = ProfileProjection.columns(userColumn: "m.user_id")

    // MARK: reads

    /// Locks the active workspace row (of `kind`) for the rest of the transaction.
    func lock(_ id: WorkspaceID, kind: WorkspaceKind = .workspace, _ c: PostgresConnection) async throws -> WorkspaceRecord? {
        try await workspaces(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM workspaces w
                WHERE w.id = \(id.uuid) AND w.state = 'active' AND w.kind = \(kind.rawValue) FOR NO KEY UPDATE
                """, logger: logger)
        ).first
    }

    /// The active workspace (of `kind`) when `user` is a member (one round trip), locked when `lock`.
    func find(
        _ id: WorkspaceID, member user: UserID, lock: Bool, kind: WorkspaceKind = .workspace, _ c: PostgresConnection
    ) async throws -> WorkspaceRecord? {
        try await workspaces(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM workspaces w
                WHERE w.id = \(id.uuid) AND w.state = 'active' AND w.kind = \(kind.rawValue)
                  AND EXISTS (SELECT 1 FROM workspace_members m WHERE m.workspace_id = w.id AND m.user_id = \(user.uuid))
                \(unescaped: lock ? "FOR NO KEY UPDATE OF w" : "")
                """, logger: logger)
        ).first
    }

    func isMember(_ id: WorkspaceID, _ user: UserID, _ c: PostgresConnection) async throws -> Bool {
        try await exists(c.query("SELECT 1 FROM workspace_members WHERE workspace_id = \(id.uuid) AND user_id = \(user.uuid)", logger: logger))
    }

    /// The active workspaces `user` belongs to, oldest first.
    func list(for user: UserID, _ c: PostgresConnection) async throws -> [WorkspaceRecord] {
        try await workspaces(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM workspaces w JOIN workspace_members m ON m.workspace_id = w.id
                WHERE m.user_id = \(user.uuid) AND w.state = 'active' AND w.kind = 'workspace' ORDER BY w.created_at, w.id
                """, logger: logger))
    }

    func members(of id: WorkspaceID, _ c: PostgresConnection) async throws -> [MemberRecord] {
        try await Self.members(
            c.query(
                """
                SELECT \(unescaped: Self.memberColumns) FROM workspace_members m LEFT JOIN user_profiles p ON p.user_id = m.user_id
                WHERE m.workspace_id = \(id.uuid) ORDER BY m.joined_at, m.user_id
                """, logger: logger))
    }

    func member(_ user: UserID, of id: WorkspaceID, _ c: PostgresConnection) async throws -> MemberRecord? {
        try await Self.members(
            c.query(
                """
                SELECT \(unescaped: Self.memberColumns) FROM workspace_members m LEFT JOIN user_profiles p ON p.user_id = m.user_id
                WHERE m.workspace_id = \(id.uuid) AND m.user_id = \(user.uuid)
                """, logger: logger)
        ).first
    }

    /// Members whose nickname or email contains `pattern` (an escaped ILIKE pattern).
    func searchMembers(of id: WorkspaceID, pattern: String, _ c: PostgresConnection) async throws -> [MemberRecord] {
        try await Self.members(
            c.query(
                """
                SELECT \(unescaped: Self.memberColumns) FROM workspace_members m JOIN user_profiles p ON p.user_id = m.user_id
                WHERE m.workspace_id = \(id.uuid) AND (p.nickname ILIKE \(pattern) OR p.email ILIKE \(pattern))
                ORDER BY m.joined_at, m.user_id
                """, logger: logger))
    }

    /// The user registered with `email` (from the projection), unless deleted.
    func user(email: String, _ c: PostgresConnection) async throws -> MemberRecord? {
        try await Self.members(
            c.query(
                """
                SELECT p.user_id, p.email, p.nickname, p.profile_image FROM user_profiles p
                WHERE lower(p.email) = lower(\(email)) AND NOT p.deleted
                """, logger: logger)
        ).first
    }

    /// Whether `path` is the cover of a workspace `user` belongs to or of a channel in one.
    func canSeeCover(_ path: String, user: UserID, _ c: PostgresConnection) async throws -> Bool {
        try await exists(
            c.query(
                """
                SELECT 1 FROM workspaces w JOIN workspace_members m ON m.workspace_id = w.id
                WHERE w.cover_image = \(path) AND m.user_id = \(user.uuid)
                UNION ALL
                SELECT 1 FROM channels k JOIN workspace_members m ON m.workspace_id = k.workspace_id
                WHERE k.cover_image = \(path) AND m.user_id = \(user.uuid)
                LIMIT 1
                """, logger: logger))
    }

    // MARK: writes

    /// Inserts a workspace; nil when the name is taken (the unique index decides races; names of
    /// communities need not be unique).
    func insert(
        _ id: WorkspaceID, name: String, description: String?, coverImage: String?, owner: UserID,
        pendingDebit: CoinRequestID?, kind: WorkspaceKind = .workspace, isPublic: Bool = true, _ c: PostgresConnection
    ) async throws -> WorkspaceRecord? {
        let state = pendingDebit == nil ? "active" : "pending"
        return try await workspaces(
            c.query(
                """
                INSERT INTO workspaces AS w (id, name, description, cover_image, owner_id, state, debit_request_id, kind, public)
                VALUES (\(id.uuid), \(name), \(description), \(coverImage), \(owner.uuid), \(state), \(pendingDebit?.uuid),
                        \(kind.rawValue), \(isPublic))
                ON CONFLICT DO NOTHING
                RETURNING \(unescaped: Self.columns)
                """, logger: logger)
        ).first
    }

    func update(_ id: WorkspaceID, name: String, description: String?, coverImage: String?, _ c: PostgresConnection) async throws -> WorkspaceRecord? {
        try await workspaces(
            c.query(
                """
                UPDATE workspaces w SET name = \(name), description = \(description), cover_image = \(coverImage)
                WHERE w.id = \(id.uuid) RETURNING \(unescaped: Self.columns)
                """, logger: logger)
        ).first
    }

    func setOwner(_ id: WorkspaceID, _ owner: UserID, _ c: PostgresConnection) async throws -> WorkspaceRecord? {
        try await workspaces(
            c.query(
                """
                UPDATE workspaces w SET owner_id = \(owner.uuid) WHERE w.id = \(id.uuid) RETURNING \(unescaped: Self.columns)
                """, logger: logger)
        ).first
    }

    /// Deletes the workspace (channels, members, categories and invites cascade).
    func delete(_ id: WorkspaceID, _ c: PostgresConnection) async throws {
        _ = try await c.query("DELETE FROM workspaces WHERE id = \(id.uuid)", logger: logger)
    }

    /// Adds a member; false when already one.
    func addMember(_ id: WorkspaceID, _ user: UserID, _ c: PostgresConnection) async throws -> Bool {
        try await exists(
            c.query(
                """
                INSERT INTO workspace_members (workspace_id, user_id) VALUES (\(id.uuid), \(user.uuid))
                ON CONFLICT DO NOTHING RETURNING 1
                """, logger: logger))
    }

    func removeMember(_ id: WorkspaceID, _ user: UserID, _ c: PostgresConnection) async throws {
        _ = try await c.query("DELETE FROM workspace_members WHERE workspace_id = \(id.uuid) AND user_id = \(user.uuid)", logger: logger)
    }

    // MARK: coin saga

    /// Whether the creation with this debit request is still pending, done, or gone (rejected).
    enum CreationState: Sendable, Equatable { case pending, active, gone }

    func creationState(_ id: WorkspaceID, _ c: PostgresConnection) async throws -> CreationState {
        for try await state in try await c.query("SELECT state FROM workspaces WHERE id = \(id.uuid)", logger: logger).decode(String.self) {
            return state == "active" ? .active : .pending
        }
        return .gone
    }

    /// Activates the pending workspace of `requestId`; nil when there is none (already decided).
    func activate(debitRequest requestId: CoinRequestID, _ c: PostgresConnection) async throws -> WorkspaceRecord? {
        try await workspaces(
            c.query(
                """
                UPDATE workspaces w SET state = 'active'
                WHERE w.debit_request_id = \(requestId.uuid) AND w.state = 'pending' RETURNING \(unescaped: Self.columns)
                """, logger: logger)
        ).first
    }

    /// Whether a workspace (pending or active) was created with the debit request `requestId`.
    func holdsDebit(_ requestId: CoinRequestID, _ c: PostgresConnection) async throws -> Bool {
        try await exists(c.query("SELECT 1 FROM workspaces WHERE debit_request_id = \(requestId.uuid)", logger: logger))
    }

    /// Deletes the pending workspace of `requestId`; returns it, nil when there is none.
    func discard(debitRequest requestId: CoinRequestID, _ c: PostgresConnection) async throws -> WorkspaceRecord? {
        try await workspaces(
            c.query(
                """
                DELETE FROM workspaces w WHERE w.debit_request_id = \(requestId.uuid) AND w.state = 'pending' RETURNING \(unescaped: Self.columns)
                """, logger: logger)
        ).first
    }

    func exists(_ rows: PostgresRowSequence) async throws -> Bool {
        for try await _ in rows { return true }
        return false
    }
}
