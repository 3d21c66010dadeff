import ChatInternalAPI
import Database
import Events
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import PostgresNIO
import ServiceKit

/// The reader check (`ChatInternal.ReaderCheck`): 204 with the conversation's kind and workspace
/// when the user may read the channel (a member) or the DM room (a participant still in its
/// workspace, or a member of a personal room, which has no workspace), else 404; 400 for malformed ids. Asked by the gateway before a credentialed
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
            // An alias is resolved first, so the check itself stays on the primary keys.
            guard let conversation = try await named.id(postgres, logger: logger) else { return Response(status: .notFound) }
            let rows = try await postgres.liveQuery(
                """
                SELECT TRUE, ch.workspace_id FROM channel_members cm JOIN channels ch ON ch.id = cm.channel_id
                WHERE cm.channel_id = \(conversation) AND cm.user_id = \(user)
                UNION ALL
                SELECT FALSE, r.workspace_id FROM dm_rooms r JOIN workspace_members w ON w.workspace_id = r.workspace_id AND w.user_id = \(user)
                WHERE r.id = \(conversation) AND \(user) IN (r.user_low, r.user_high)
                UNION ALL
                SELECT FALSE, NULL::uuid FROM dm_rooms r JOIN room_members m ON m.room_id = r.id AND m.user_id = \(user)
                WHERE r.id = \(conversation) AND r.workspace_id IS NULL
                LIMIT 1
                """, logger: logger)
            for try await (isChannel, workspace) in rows.decode((Bool, UUID?).self) {
                let readable = ChatInternal.Readable(kind: isChannel ? .channel : .dm, workspaceId: workspace, conversationId: conversation)
                return Response(status: .noContent, headers: readable.headerFields)
            }
            return Response(status: .notFound)
        }
        routes.get(RouterPath(ChatInternal.ChannelAlias.route)) { _, context -> Response in
            guard let alias = context.parameters.get("alias").flatMap(IntegerAlias.parse) else { return Response(status: .badRequest) }
            guard let id = try await ConversationName.channelAlias(alias).id(postgres, logger: logger) else { return Response(status: .notFound) }
            var headers = HTTPFields()
            headers[ChatInternal.ReaderCheck.idHeader] = id.lowercased
            return Response(status: .noContent, headers: headers)
        }
        routes.get(RouterPath(ChatInternal.CommunityCheck.route)) { _, context -> Response in
            guard let community = context.parameters.get("community"), let user = context.parameters.get("user").flatMap(UUID.init(uuidString:)) else {
                return Response(status: .badRequest)
            }
            var workspaceId = UUID(parsing: community)
            if workspaceId == nil {
                guard let alias = IntegerAlias.parse(community) else { return Response(status: .badRequest) }
                for try await id in try await postgres.liveQuery("SELECT workspace_id FROM workspace_aliases WHERE alias = \(alias)", logger: logger)
                    .decode(UUID.self)
                { workspaceId = id }
            }
            guard let workspaceId else { return Response(status: .notFound) }
            let rows = try await postgres.liveQuery(
                "SELECT workspace_id FROM workspace_members WHERE workspace_id = \(workspaceId) AND user_id = \(user)", logger: logger)
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
        if let id = UUID(parsing: text) {
            self = .id(id)
        } else if text.hasPrefix("c-"), let alias = IntegerAlias.parse(text.dropFirst(2)) {
            self = .channelAlias(alias)
        } else if text.hasPrefix("r-"), let alias = IntegerAlias.parse(text.dropFirst(2)) {
            self = .roomAlias(alias)
        } else {
            return nil
        }
    }

    /// The conversation's id: as given, or the channel or room the alias names (nil: none).
    func id(_ postgres: PostgresClient, logger: Logger) async throws -> UUID? {
        let rows: LiveRows
        switch self {
        case .id(let id): return id
        case .channelAlias(let alias): rows = try await postgres.liveQuery("SELECT id FROM channels WHERE alias = \(alias)", logger: logger)
        case .roomAlias(let alias): rows = try await postgres.liveQuery("SELECT id FROM dm_rooms WHERE alias = \(alias)", logger: logger)
        }
        for try await id in rows.decode(UUID.self) { return id }
        return nil
    }
}
