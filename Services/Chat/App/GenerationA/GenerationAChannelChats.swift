import ClientContract
import Database
import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit

/// Gen A's channel chats (Lilac, client contract §1.9, docs/generation-a.md):
/// `/gena/v1/workspaces/{alias}/channels/{name}/chats` and `/unreads`. The workspace alias and the
/// channel's name become the ids the Gen B code reads; that code runs unchanged (membership, joining
/// by reading, the exclusive cursor, events) and its answer is shown with integer ids.
extension ChatAPI {
    /// Mounted at `/gena/v1/workspaces/:workspace/channels/:channel`.
    var generationAChannelChatRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("chats") { request, context -> [GenerationAChat] in
            let (channel, history) = try await channelHistory(request, try await generationB(context))
            return history.map { GenerationAChat($0, in: channel) }
        }
        routes.post("chats") { request, context -> GenerationAChat in
            let (channel, message) = try await postChannelChat(request, try await generationB(context))
            return GenerationAChat(message, in: channel)
        }
        routes.get("unreads") { request, context -> GenerationAUnreads in
            let context = try await generationB(context)
            let unread = try await channelUnreads(request, context)
            let channel: ChannelID = try pathID(context, "conversation")
            let alias = try await postgres.withLiveConnection { try await messages.alias(of: channel, $0) }
            return GenerationAUnreads(channel_id: alias ?? 0, name: unread.name, count: unread.count)
        }
        return routes
    }

    /// The context with Gen B's `workspace` and `conversation` for the path's workspace alias and
    /// channel name (a name that names no channel leaves them unset: E13, as for an unknown id).
    func generationB(_ context: AuthenticatedContext) async throws -> AuthenticatedContext {
        let alias = context.parameters.get("workspace").flatMap(IntegerAlias.parse)
        let name = context.parameters.get("channel").map { $0.removingPercentEncoding ?? $0 }
        let ids = try await postgres.withLiveConnection { c -> (WorkspaceID, ChannelID)? in
            guard let alias, let name, let workspace = try await messages.workspace(alias: alias, c),
                let channel = try await messages.channel(named: name, in: workspace, c)
            else { return nil }
            return (workspace, channel)
        }
        var translated = context
        translated.coreContext.parameters["workspace"] = ids.map { Substring($0.0.description) } ?? "-"
        translated.coreContext.parameters["conversation"] = ids.map { Substring($0.1.description) } ?? "-"
        return translated
    }
}

/// Lilac's `Chatting`: the channel's and the sender's aliases, the message's `generationAChatID`.
struct GenerationAChat: ResponseEncodable, Sendable {
    var channel_id: Int64
    var channelName: String
    var chat_id: Int64
    var content: String?
    var createdAt: String
    var files: [String]
    var user: GenerationAMember

    init(_ message: StoredMessage, in channel: ChannelRef) {
        channel_id = channel.alias ?? 0
        channelName = channel.name
        chat_id = message.id.generationAChatID
        content = message.content
        createdAt = Timestamp.format(message.createdAt)
        files = message.files
        user = GenerationAMember(MemberSummary(message.sender), alias: message.sender.alias)
    }
}

/// Lilac's `CountOfUnread`.
struct GenerationAUnreads: ResponseEncodable, Sendable {
    var channel_id: Int64
    var name: String
    var count: Int
}

extension MessageStore {
    /// The workspace with this integer alias (from `workspace.v1`).
    func workspace(alias: Int64, _ c: PostgresConnection) async throws -> WorkspaceID? {
        for try await id in try await c.query("SELECT workspace_id FROM workspace_aliases WHERE alias = \(alias)", logger: logger).decode(UUID.self) {
            return WorkspaceID(id)
        }
        return nil
    }

    /// The channel (not a thread) of the workspace with this name, whatever its case.
    func channel(named name: String, in workspace: WorkspaceID, _ c: PostgresConnection) async throws -> ChannelID? {
        for try await id in try await c.query(
            "SELECT id FROM channels WHERE workspace_id = \(workspace.uuid) AND parent_id IS NULL AND lower(name) = lower(\(name)) LIMIT 1",
            logger: logger
        ).decode(UUID.self) {
            return ChannelID(id)
        }
        return nil
    }

    func alias(of channel: ChannelID, _ c: PostgresConnection) async throws -> Int64? {
        for try await alias in try await c.query("SELECT alias FROM channels WHERE id = \(channel.uuid)", logger: logger).decode(Int64?.self) {
            return alias
        }
        return nil
    }
}
