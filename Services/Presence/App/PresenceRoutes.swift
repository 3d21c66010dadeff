import Database
import Events
import Foundation
import Hummingbird
import Logging
import PostgresNIO
import ServiceKit

/// `GET /v1/workspaces/{w}/presence` → `[{user_id, status, lastSeen}]` for the workspace's
/// members, to members only (anyone else: E13, as for the workspace itself). `lastSeen` is when
/// an online member came online or an offline one was last online (null: never seen since
/// presence began). The status is the one last published on `presence.v1`.
struct PresenceRoutes {
    let postgres: PostgresClient
    let logger: Logger

    struct MemberPresence: ResponseEncodable, Sendable {
        var user_id: UserID
        var status: String
        var lastSeen: String?

        func encode(to encoder: any Encoder) throws {
            enum Key: String, CodingKey { case user_id, status, lastSeen }
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(user_id, forKey: .user_id)
            try container.encode(status, forKey: .status)
            try container.encode(lastSeen, forKey: .lastSeen)  // null rather than absent
        }
    }

    func add(to router: some RouterMethods<SuiteRequestContext>) {
        let routes = router.group("v1/workspaces/:workspace", context: AuthenticatedContext.self)
        routes.get("presence") { _, context -> [MemberPresence] in
            let workspace: WorkspaceID = try context.pathID("workspace")
            return try await members(of: workspace, asking: context.identity)
        }
    }

    func members(of workspace: WorkspaceID, asking user: UserID) async throws -> [MemberPresence] {
        let rows = try await postgres.liveQuery(
            """
            SELECT m.user_id, s.status, s.last_seen FROM workspace_members m
            LEFT JOIN presence_status s ON s.user_id = m.user_id
            WHERE m.workspace_id = \(workspace.uuid)
              AND EXISTS (SELECT 1 FROM workspace_members me WHERE me.workspace_id = \(workspace.uuid) AND me.user_id = \(user.uuid))
            ORDER BY m.user_id
            """, logger: logger)
        var members: [MemberPresence] = []
        for try await (id, status, lastSeen) in rows.decode((UUID, String?, Date?).self) {
            members.append(
                MemberPresence(user_id: UserID(id), status: status ?? PresenceEvents.Status.offline.rawValue, lastSeen: lastSeen.map(Timestamp.format)))
        }
        // The caller is a member whenever there is a row (the EXISTS above): none, not a member.
        guard !members.isEmpty else { throw APIError.notFound("workspace") }
        return members
    }
}
