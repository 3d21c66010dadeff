import Database
import Events
import Foundation
import Logging
import PostgresNIO

struct RoomRef: Sendable {
    var id: RoomID
    var workspaceId: WorkspaceID
    var participants: [UserID]
    var createdAt: Date

    /// The participant who is not `user` (`user` itself in a note-to-self room).
    func other(than user: UserID) -> UserID { participants.first { $0 != user } ?? user }
}

/// SQL of DM rooms: one per pair of users per workspace, open to its participants while they are
/// members of the workspace (per chat's read model of `workspace.v1`).
struct RoomStore: Sendable {
    let logger: Logger

    func isWorkspaceMember(_ user: UserID, of workspace: WorkspaceID, _ c: PostgresConnection) async throws -> Bool {
        for try await _ in try await c.query(
            """
            SELECT 1 FROM workspace_members WHERE workspace_id = \(workspace.uuid) AND user_id = \(user.uuid)
            """, logger: logger)
        {
            return true
        }
        return false
    }

    private func rooms(_ rows: PostgresRowSequence) async throws -> [RoomRef] {
        var result: [RoomRef] = []
        for try await (id, workspace, low, high, createdAt) in rows.decode((UUID, UUID, UUID, UUID, Date).self) {
            result.append(RoomRef(id: RoomID(id), workspaceId: WorkspaceID(workspace), participants: [UserID(low), UserID(high)], createdAt: createdAt))
        }
        return result
    }

    private static let columns = "r.id, r.workspace_id, r.user_low, r.user_high, r.created_at"

    /// The room of `a` and `b` in the workspace, created when missing (concurrent calls agree:
    /// the unique pair decides).
    func room(between a: UserID, and b: UserID, in workspace: WorkspaceID, _ c: PostgresConnection) async throws -> RoomRef {
        let (low, high) = a.uuid.lowercased <= b.uuid.lowercased ? (a, b) : (b, a)
        _ = try await c.query(
            """
            INSERT INTO dm_rooms (id, workspace_id, user_low, user_high) VALUES (\(RoomID.generate().uuid), \(workspace.uuid), \(low.uuid), \(high.uuid))
            ON CONFLICT (workspace_id, user_low, user_high) DO NOTHING
            """, logger: logger)
        guard
            let room = try await rooms(
                c.query(
                    """
                    SELECT \(unescaped: Self.columns) FROM dm_rooms r
                    WHERE r.workspace_id = \(workspace.uuid) AND r.user_low = \(low.uuid) AND r.user_high = \(high.uuid)
                    """, logger: logger)
            ).first
        else { throw ChatStoreError("DM room vanished after insert") }
        return room
    }

    /// `user`'s rooms in the workspace, newest first.
    func rooms(of user: UserID, in workspace: WorkspaceID, _ c: PostgresConnection) async throws -> [RoomRef] {
        try await rooms(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM dm_rooms r
                WHERE r.workspace_id = \(workspace.uuid) AND (r.user_low = \(user.uuid) OR r.user_high = \(user.uuid))
                ORDER BY r.created_at DESC, r.id
                """, logger: logger))
    }

    /// The room when `user` is a participant and still a member of its workspace; locked when `lock`.
    func room(_ id: RoomID, in workspace: WorkspaceID, participant user: UserID, lock: Bool, _ c: PostgresConnection) async throws -> RoomRef? {
        try await rooms(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM dm_rooms r
                WHERE r.id = \(id.uuid) AND r.workspace_id = \(workspace.uuid) AND (r.user_low = \(user.uuid) OR r.user_high = \(user.uuid))
                  AND EXISTS (SELECT 1 FROM workspace_members w WHERE w.workspace_id = r.workspace_id AND w.user_id = \(user.uuid))
                \(unescaped: lock ? "FOR NO KEY UPDATE OF r" : "")
                """, logger: logger)
        ).first
    }
}
