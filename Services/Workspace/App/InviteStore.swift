import Events
import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// SQL of invite codes (Discord-style joins by code, with expiry and a use limit).
struct InviteStore: Sendable {
    let logger: Logger

    static let columns = "code, workspace_id, created_by, max_uses, uses, expires_at, revoked, created_at, alias"

    func invites(_ rows: PostgresRowSequence) async throws -> [InviteRecord] {
        var result: [InviteRecord] = []
        for try await (code, workspace, creator, maxUses, uses, expiresAt, revoked, createdAt, alias) in rows.decode(
            (String, UUID, UUID, Int32?, Int32, Date?, Bool, Date, Int64).self
        ) {
            result.append(
                InviteRecord(
                    code: code, workspaceId: WorkspaceID(workspace), createdBy: UserID(creator), maxUses: maxUses.map(Int.init),
                    uses: Int(uses), expiresAt: expiresAt, revoked: revoked, createdAt: createdAt, alias: alias
                ))
        }
        return result
    }

    func insert(workspace: WorkspaceID, creator: UserID, maxUses: Int?, expiresInSeconds: Int?, _ c: PostgresConnection) async throws -> InviteRecord {
        let maxUses32 = maxUses.map(Int32.init)
        let seconds = expiresInSeconds.map(Double.init)
        let rows = try await invites(
            c.query(
                """
                INSERT INTO invites (code, workspace_id, created_by, max_uses, expires_at)
                VALUES (\(InviteCode.generate()), \(workspace.uuid), \(creator.uuid), \(maxUses32),
                        date_trunc('milliseconds', clock_timestamp()) + make_interval(secs => \(seconds)))
                RETURNING \(unescaped: Self.columns)
                """, logger: logger))
        guard let invite = rows.first else { throw PostgresStoreError("invite insert returned no row") }
        return invite
    }

    /// Unrevoked invites of the workspace (expired and used-up ones included: they show why).
    func list(in workspace: WorkspaceID, _ c: PostgresConnection) async throws -> [InviteRecord] {
        try await invites(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM invites WHERE workspace_id = \(workspace.uuid) AND NOT revoked ORDER BY created_at, code
                """, logger: logger))
    }

    func find(_ code: String, in workspace: WorkspaceID, _ c: PostgresConnection) async throws -> InviteRecord? {
        try await invites(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM invites WHERE code = \(code) AND workspace_id = \(workspace.uuid) AND NOT revoked
                """, logger: logger)
        ).first
    }

    func revoke(_ code: String, _ c: PostgresConnection) async throws {
        _ = try await c.query("UPDATE invites SET revoked = true WHERE code = \(code)", logger: logger)
    }

    func workspace(of code: String, _ c: PostgresConnection) async throws -> WorkspaceID? {
        for try await id in try await c.query("SELECT workspace_id FROM invites WHERE code = \(code)", logger: logger).decode(UUID.self) {
            return WorkspaceID(id)
        }
        return nil
    }

    /// Locks a usable invite (not revoked, not expired, uses left) for the transaction.
    func lockUsable(_ code: String, _ c: PostgresConnection) async throws -> InviteRecord? {
        try await invites(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM invites
                WHERE code = \(code) AND NOT revoked AND (expires_at IS NULL OR expires_at > clock_timestamp())
                  AND (max_uses IS NULL OR uses < max_uses)
                FOR UPDATE
                """, logger: logger)
        ).first
    }

    func use(_ code: String, _ c: PostgresConnection) async throws {
        _ = try await c.query("UPDATE invites SET uses = uses + 1 WHERE code = \(code)", logger: logger)
    }
}
