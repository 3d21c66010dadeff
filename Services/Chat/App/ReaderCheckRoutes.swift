import Foundation
import HTTPTypes
import Hummingbird
import PostgresNIO
import ServiceKit

/// `GET /internal/v1/conversations/{conversation}/readers/{user}`: 204 when the user may read the
/// channel (a member) or the DM room (a participant still in its workspace), with headers
/// `Chatsuite-Conversation-Kind: channel|dm` and `Chatsuite-Conversation-Workspace: {id}`, else
/// 404; 400 for malformed ids. Asked by the
/// gateway before a credentialed Socket.IO client joins a namespace (docs/realtime.md) and before
/// a native session subscribes to a conversation. Not under `/v1`, so the gateway's route table
/// never forwards clients here.
extension ChatAPI {
    static let conversationKindHeader = HTTPField.Name("Chatsuite-Conversation-Kind")!
    static let conversationWorkspaceHeader = HTTPField.Name("Chatsuite-Conversation-Workspace")!

    func addReaderCheckRoutes(to routes: RouteCollection<SuiteRequestContext>) {
        routes.get("conversations/:conversation/readers/:user") { _, context -> Response in
            guard let conversation = context.parameters.get("conversation").flatMap(UUID.init(uuidString:)),
                  let user = context.parameters.get("user").flatMap(UUID.init(uuidString:)) else {
                return Response(status: .badRequest)
            }
            let rows = try await postgres.query("""
                SELECT 'channel', ch.workspace_id FROM channel_members cm JOIN channels ch ON ch.id = cm.channel_id
                WHERE cm.channel_id = \(conversation) AND cm.user_id = \(user)
                UNION ALL
                SELECT 'dm', r.workspace_id FROM dm_rooms r JOIN workspace_members w ON w.workspace_id = r.workspace_id AND w.user_id = \(user)
                WHERE r.id = \(conversation) AND \(user) IN (r.user_low, r.user_high)
                LIMIT 1
                """, logger: logger)
            for try await (kind, workspace) in rows.decode((String, UUID).self) {
                return Response(status: .noContent, headers: [
                    Self.conversationKindHeader: kind, Self.conversationWorkspaceHeader: workspace.uuidString.lowercased(),
                ])
            }
            return Response(status: .notFound)
        }
    }
}
