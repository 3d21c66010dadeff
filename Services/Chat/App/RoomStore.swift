import Database
import Events
import Foundation
import Logging
import PostgresNIO

/// A DM room: two members of a workspace, or a personal room outside workspaces (two friends,
/// or a group with a name, an icon and an owner; see `PersonalRoomStore`).
struct RoomRef: Sendable {
    var id: RoomID
    /// nil for a personal room.
    var workspaceId: WorkspaceID?
    /// The members (a workspace room's pair; a personal room's members in joining order).
    var participants: [UserID]
    var createdAt: Date
    /// The integer alias legacy clients know it by.
    var alias: Int64? = nil
    var group = false
    /// A group's name and icon (stored path) and its owner.
    var name: String? = nil
    var icon: String? = nil
    var ownerId: UserID? = nil

    var isPersonal: Bool { workspaceId == nil }

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
        for try await (id, workspace, low, high, createdAt, alias) in rows.decode((UUID, UUID, UUID, UUID, Date, Int64).self) {
            result.append(
                RoomRef(id: RoomID(id), workspaceId: WorkspaceID(workspace), participants: [UserID(low), UserID(high)], createdAt: createdAt, alias: alias))
        }
        return result
    }

    private static let columns = "r.id, r.workspace_id, r.user_low, r.user_high, r.created_at, r.alias"

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

    /// The room with integer alias `alias` (a workspace room or a personal one) when `user` may use
    /// it; locked when `lock`.
    func room(alias: Int64, participant user: UserID, lock: Bool, _ c: PostgresConnection) async throws -> RoomRef? {
        for try await (id, workspace) in try await c.query("SELECT id, workspace_id FROM dm_rooms WHERE alias = \(alias)", logger: logger)
            .decode((UUID, UUID?).self)
        {
            if let workspace { return try await room(RoomID(id), in: WorkspaceID(workspace), participant: user, lock: lock, c) }
            return try await PersonalRoomStore(logger: logger).room(RoomID(id), member: user, lock: lock, c)
        }
        return nil
    }

    /// The room with integer alias `alias`, whoever asks (Smooth's token-less history reads).
    func room(alias: Int64, _ c: PostgresConnection) async throws -> RoomRef? {
        for try await (id, workspace) in try await c.query("SELECT id, workspace_id FROM dm_rooms WHERE alias = \(alias)", logger: logger)
            .decode((UUID, UUID?).self)
        {
            guard workspace != nil else { return try await PersonalRoomStore(logger: logger).room(RoomID(id), c) }
            return try await rooms(c.query("SELECT \(unescaped: Self.columns) FROM dm_rooms r WHERE r.id = \(id)", logger: logger)).first
        }
        return nil
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
