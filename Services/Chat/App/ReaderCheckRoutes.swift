import ChatInternalAPI
import Events
import Foundation
import HTTPTypes
import Hummingbird
import PostgresNIO
import ServiceKit

/// The reader check (`ChatInternal.ReaderCheck`): 204 with the conversation's kind and workspace
/// when the user may read the channel (a member) or the DM room (a participant still in its
/// workspace), else 404; 400 for malformed ids. Asked by the gateway before a credentialed
/// Socket.IO client joins a namespace (docs/realtime.md) and before a native session subscribes
/// to a conversation.
extension ChatAPI {
    func addReaderCheckRoutes(to routes: RouteCollection<SuiteRequestContext>) {
        routes.get(RouterPath(ChatInternal.ReaderCheck.route)) { _, context -> Response in
            guard let conversation = context.parameters.get("conversation").flatMap(UUID.init(uuidString:)),
                let user = context.parameters.get("user").flatMap(UUID.init(uuidString:))
            else {
                return Response(status: .badRequest)
            }
            let rows = try await postgres.query(
                """
                SELECT TRUE, ch.workspace_id FROM channel_members cm JOIN channels ch ON ch.id = cm.channel_id
                WHERE cm.channel_id = \(conversation) AND cm.user_id = \(user)
                UNION ALL
                SELECT FALSE, r.workspace_id FROM dm_rooms r JOIN workspace_members w ON w.workspace_id = r.workspace_id AND w.user_id = \(user)
                WHERE r.id = \(conversation) AND \(user) IN (r.user_low, r.user_high)
                LIMIT 1
                """, logger: logger)
            for try await (isChannel, workspace) in rows.decode((Bool, UUID).self) {
                let readable = ChatInternal.Readable(kind: isChannel ? .channel : .dm, workspaceId: workspace)
                return Response(status: .noContent, headers: readable.headerFields)
            }
            return Response(status: .notFound)
        }
    }
}
