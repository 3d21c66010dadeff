import Database
import Events
import Foundation
import Hummingbird
import Logging
import PostgresNIO
import ServiceKit

/// `/v1/workspaces/{w}/channels/{c}/chats` and `/unreads` (client contract §1.4, §1.6). Only the
/// channel's members (per chat's read model of `workspace.v1`) may read or write: anyone else,
/// including a member the read model has not caught up with yet, gets E13.
struct ChannelChatRoutes: Sendable {
    let postgres: PostgresClient
    let store: MessageStore
    let logger: Logger

    static let source = "chat"

    func add(to router: Router<SuiteRequestContext>) {
        router.post("/v1/workspaces/:workspace/channels/:channel/chats") { request, context in try await send(request, context) }
        router.get("/v1/workspaces/:workspace/channels/:channel/chats") { request, context -> [ChannelChatResponse] in
            let (me, workspace, channelId) = try ids(request, context)
            let cursor = try Self.date(request.uri.queryParameters.get("cursor_date"))
            return try await postgres.withConnection { c in
                guard let channel = try await store.channel(channelId, in: workspace, member: me, lock: false, c) else { throw APIError.notFound("channel") }
                return try await store.history(channel, after: cursor, c).map(ChannelChatResponse.init)
            }
        }
        router.get("/v1/workspaces/:workspace/channels/:channel/unreads") { request, context -> ChannelUnreadResponse in
            let (me, workspace, channelId) = try ids(request, context)
            let after = try Self.date(request.uri.queryParameters.get("after"))
            return try await postgres.withConnection { c in
                guard let channel = try await store.channel(channelId, in: workspace, member: me, lock: false, c) else { throw APIError.notFound("channel") }
                // No `after` means the client has nothing local: the contract answers 0.
                var count = 0
                if let after { count = try await store.unreadCount(channel, after: after, reader: me, c) }
                return ChannelUnreadResponse(channel_id: channel.id, name: channel.name, count: count)
            }
        }
    }

    private func ids(_ request: Request, _ context: SuiteRequestContext) throws -> (UserID, WorkspaceID, ChannelID) {
        guard let me = UserID(try request.authenticatedUser()) else { throw APIError.authenticationFailed }
        guard let workspace = context.parameters.get("workspace").flatMap(WorkspaceID.init),
              let channel = context.parameters.get("channel").flatMap(ChannelID.init)
        else { throw APIError.notFound("channel") }
        return (me, workspace, channel)
    }

    /// A `cursor_date` / `after` value in epoch milliseconds: absent or empty is nil; otherwise the
    /// contract's format (E11 when unreadable).
    static func date(_ text: String?) throws -> Int64? {
        guard let text, !text.isEmpty else { return nil }
        guard let milliseconds = Timestamp.parseMilliseconds(text) else { throw APIError.badRequest("dates are yyyy-MM-ddTHH:mm:ss.SSSZ") }
        return milliseconds
    }

    /// Stores the message and its `chat.channel-message.created` event in one transaction. The
    /// channel row is locked for it, which gives per-channel times that are unique and in commit
    /// order; a retried send with the same `nonce` returns the first message.
    private func send(_ request: Request, _ context: SuiteRequestContext) async throws -> ChannelChatResponse {
        let (me, workspace, channelId) = try ids(request, context)
        let (content, nonce) = try await MessageForm.read(request, context: context).validated()
        return ChannelChatResponse(try await postgres.withTransaction(logger: logger) { c -> ChannelMessage in
            guard let channel = try await store.channel(channelId, in: workspace, member: me, lock: true, c) else { throw APIError.notFound("channel") }
            if let nonce, let earlier = try await store.message(sender: me, nonce: nonce, channel: channel, c) { return earlier }
            let id = MessageID.generate()
            let time = try await store.insert(id, channel: channel, sender: me, content: content, files: [], nonce: nonce, c)
            let message = ChannelMessage(id: id, channel: channel, sender: try await store.sender(me, c), content: content, files: [], createdAt: time)
            try await Outbox.append(CloudEvent(source: Self.source, data: ChatEvents.ChannelMessageCreated(
                messageId: message.id, workspaceId: workspace, channelId: channelId, channelName: channel.name, sender: message.sender,
                content: content, files: [], createdAt: time
            )), on: c, logger: logger)
            return message
        })
    }
}
