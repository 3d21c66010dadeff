import Database
import Events
import Foundation
import Hummingbird
import Logging
import PostgresNIO
import ServiceKit

/// Per-conversation notification settings (additive to the contract):
/// `PUT /v1/workspaces/{w}/channels/{c}/notifications` and `PUT /v1/workspaces/{w}/dms/{room}/notifications`
/// with `{"mode": "all" | "mentions" | "none"}` → `{channel_id | room_id, mode}`; `GET` the same
/// paths → the current mode (`all` when never set). `mentions` notifies only messages that mention
/// the user; `none` nothing. A channel's setting is for its members (push's read model of
/// `workspace.v1`), a room's for members of its workspace; anyone else gets E13, a mode outside
/// the three E11.
struct NotificationSettingsRoutes {
    let postgres: PostgresClient
    let logger: Logger

    enum Mode: String, Codable, Sendable { case all, mentions, none }

    struct Body: Decodable { var mode: String? }

    struct Answer: ResponseEncodable, Sendable {
        var channel_id: String?
        var room_id: String?
        var mode: Mode
    }

    func add(to router: some RouterMethods<SuiteRequestContext>) {
        let workspace = router.group("v1/workspaces/:workspace", context: AuthenticatedContext.self)
        for kind in ["channels", "dms"] {
            let isChannel = kind == "channels"
            workspace.put("\(kind)/:conversation/notifications") { request, context -> Answer in
                let body = try await request.decodeBody(as: Body.self, context: context, limit: 4_096)
                guard let mode = body.mode.flatMap(Mode.init(rawValue:)) else { throw APIError.badRequest("mode must be all, mentions or none") }
                let conversation = try await authorized(context, channel: isChannel)
                _ = try await postgres.liveQuery(
                    """
                    INSERT INTO notification_settings (user_id, conversation_id, mode) VALUES (\(context.identity.uuid), \(conversation), \(mode.rawValue))
                    ON CONFLICT (user_id, conversation_id) DO UPDATE SET mode = EXCLUDED.mode
                    """, logger: logger)
                return Answer(channel_id: isChannel ? conversation.lowercased : nil, room_id: isChannel ? nil : conversation.lowercased, mode: mode)
            }
            workspace.get("\(kind)/:conversation/notifications") { _, context -> Answer in
                let conversation = try await authorized(context, channel: isChannel)
                let rows = try await postgres.liveQuery(
                    "SELECT mode FROM notification_settings WHERE user_id = \(context.identity.uuid) AND conversation_id = \(conversation)", logger: logger)
                var mode = Mode.all
                for try await value in rows.decode(String.self) { mode = Mode(rawValue: value) ?? .all }
                return Answer(channel_id: isChannel ? conversation.lowercased : nil, room_id: isChannel ? nil : conversation.lowercased, mode: mode)
            }
        }
    }

    /// The conversation of the path, when the caller may set its notifications (else E13).
    private func authorized(_ context: AuthenticatedContext, channel: Bool) async throws -> UUID {
        let workspace: WorkspaceID = try context.pathID("workspace")
        guard let conversation = context.parameters.get("conversation").flatMap(UUID.init(uuidString:)) else { throw APIError.notFound("conversation") }
        let me = context.identity.uuid
        let rows =
            channel
            ? try await postgres.liveQuery(
                """
                SELECT 1 FROM channel_members c JOIN workspace_members w ON w.user_id = c.user_id AND w.workspace_id = \(workspace.uuid)
                WHERE c.channel_id = \(conversation) AND c.user_id = \(me)
                """, logger: logger)
            : try await postgres.liveQuery(
                "SELECT 1 FROM workspace_members WHERE workspace_id = \(workspace.uuid) AND user_id = \(me)", logger: logger)
        for try await _ in rows { return conversation }
        throw APIError.notFound(channel ? "channel" : "workspace")
    }
}
