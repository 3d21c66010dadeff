import Events
import Foundation
import Logging
import PostgresNIO

/// A service's own list of who is in which workspace, built from `workspace.v1` (`chat`, `presence`
/// and `push` keep one): the table, and the three changes, each an idempotent insert or delete.
/// Services that keep more from the same events (channel members) call these from their handlers.
public enum WorkspaceMembersProjection {
    /// The table, for the service's own migration.
    public static let createTable = """
        CREATE TABLE workspace_members (
            workspace_id uuid NOT NULL,
            user_id uuid NOT NULL,
            PRIMARY KEY (workspace_id, user_id)
        )
        """

    /// Adds the handlers of `member-joined`, `member-left` and `workspace.deleted` to a router
    /// (for a service that keeps nothing else from them).
    public static func register(into router: inout EventRouter) {
        router.on(WorkspaceEvents.MemberJoined.self) { event, context in try await joined(event.data, context) }
        router.on(WorkspaceEvents.MemberLeft.self) { event, context in try await left(event.data, context) }
        router.on(WorkspaceEvents.WorkspaceDeleted.self) { event, context in try await deleted(event.data, context) }
    }

    public static func joined(_ e: WorkspaceEvents.MemberJoined, _ context: EventContext) async throws {
        _ = try await context.connection.query(
            """
            INSERT INTO workspace_members (workspace_id, user_id) VALUES (\(e.workspaceId.uuid), \(e.userId.uuid)) ON CONFLICT DO NOTHING
            """, logger: context.logger)
    }

    public static func left(_ e: WorkspaceEvents.MemberLeft, _ context: EventContext) async throws {
        _ = try await context.connection.query(
            "DELETE FROM workspace_members WHERE workspace_id = \(e.workspaceId.uuid) AND user_id = \(e.userId.uuid)", logger: context.logger)
    }

    public static func deleted(_ e: WorkspaceEvents.WorkspaceDeleted, _ context: EventContext) async throws {
        _ = try await context.connection.query("DELETE FROM workspace_members WHERE workspace_id = \(e.workspaceId.uuid)", logger: context.logger)
    }
}
