import Database
import Events
import PostgresNIO

/// `workspace.v1` → who is in which workspace. Events of one workspace arrive in order and carry
/// the state after the change, so each is an idempotent insert or delete.
enum MembershipProjection {
    static func register(into router: inout EventRouter) {
        router.on(WorkspaceEvents.MemberJoined.self) { event, context in
            _ = try await context.connection.query(
                """
                INSERT INTO workspace_members (workspace_id, user_id) VALUES (\(event.data.workspaceId.uuid), \(event.data.userId.uuid))
                ON CONFLICT DO NOTHING
                """, logger: context.logger)
        }
        router.on(WorkspaceEvents.MemberLeft.self) { event, context in
            _ = try await context.connection.query(
                """
                DELETE FROM workspace_members WHERE workspace_id = \(event.data.workspaceId.uuid) AND user_id = \(event.data.userId.uuid)
                """, logger: context.logger)
        }
        router.on(WorkspaceEvents.WorkspaceDeleted.self) { event, context in
            _ = try await context.connection.query(
                "DELETE FROM workspace_members WHERE workspace_id = \(event.data.workspaceId.uuid)", logger: context.logger)
        }
    }
}
