import ChatInternalAPI
import Database
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
            guard let named = context.parameters.get("conversation").flatMap(ConversationName.init),
                let user = context.parameters.get("user").flatMap(UUID.init(uuidString:))
            else {
                return Response(status: .badRequest)
            }
            // One of the three keys is set: the id, or a channel's or a room's alias.
            let (id, channelAlias, roomAlias) = named.keys
            let rows = try await postgres.query(
                """
                SELECT TRUE, ch.workspace_id, ch.id FROM channel_members cm JOIN channels ch ON ch.id = cm.channel_id
                WHERE (ch.id = \(id) OR ch.alias = \(channelAlias)) AND cm.user_id = \(user)
                UNION ALL
                SELECT FALSE, r.workspace_id, r.id FROM dm_rooms r JOIN workspace_members w ON w.workspace_id = r.workspace_id AND w.user_id = \(user)
                WHERE (r.id = \(id) OR r.alias = \(roomAlias)) AND \(user) IN (r.user_low, r.user_high)
                LIMIT 1
                """, logger: logger)
            for try await (isChannel, workspace, conversation) in rows.decode((Bool, UUID, UUID).self) {
                let readable = ChatInternal.Readable(kind: isChannel ? .channel : .dm, workspaceId: workspace, conversationId: conversation)
                return Response(status: .noContent, headers: readable.headerFields)
            }
            return Response(status: .notFound)
        }
        routes.get(RouterPath(ChatInternal.CommunityCheck.route)) { _, context -> Response in
            guard let community = context.parameters.get("community"), let user = context.parameters.get("user").flatMap(UUID.init(uuidString:)) else {
                return Response(status: .badRequest)
            }
            let (id, alias) = (UUID(uuidString: community), IntegerAlias.parse(community))
            guard id != nil || alias != nil else { return Response(status: .badRequest) }
            let rows = try await postgres.query(
                """
                SELECT w.workspace_id FROM workspace_members w LEFT JOIN workspace_aliases a ON a.workspace_id = w.workspace_id
                WHERE w.user_id = \(user) AND (w.workspace_id = \(id) OR a.alias = \(alias))
                LIMIT 1
                """, logger: logger)
            for try await workspace in rows.decode(UUID.self) {
                var headers = HTTPFields()
                headers[ChatInternal.ReaderCheck.workspaceHeader] = workspace.lowercased
                return Response(status: .noContent, headers: headers)
            }
            return Response(status: .notFound)
        }
    }
}

/// How the reader check names a conversation: its id, or `c-{alias}` / `r-{alias}` (a legacy
/// client's integer id of a channel or a room).
private enum ConversationName {
    case id(UUID)
    case channelAlias(Int64)
    case roomAlias(Int64)

    init?(_ text: String) {
        if let id = UUID(uuidString: text) {
            self = .id(id)
        } else if text.hasPrefix("c-"), let alias = IntegerAlias.parse(text.dropFirst(2)) {
            self = .channelAlias(alias)
        } else if text.hasPrefix("r-"), let alias = IntegerAlias.parse(text.dropFirst(2)) {
            self = .roomAlias(alias)
        } else {
            return nil
        }
    }

    /// SQL parameters: the one that applies, the others null (which match nothing).
    var keys: (UUID?, Int64?, Int64?) {
        switch self {
        case .id(let id): (id, nil, nil)
        case .channelAlias(let alias): (nil, alias, nil)
        case .roomAlias(let alias): (nil, nil, alias)
        }
    }
}
