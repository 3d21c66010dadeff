import ClientContract
import Database
import Events
import Foundation
import Metrics
import Hummingbird
import PostgresNIO
import ServiceKit

/// `/v1/workspaces/{w}/channels/{c}/chats` and `/unreads` (client contract §1.4, §1.6). Only the
/// channel's members (per chat's read model of `workspace.v1`) may read or write. A member of the
/// workspace who is not in the channel joins it by reading or writing its chats (clients explore
/// channels without a join call; see `joiningChannel`); anyone else gets E13.
extension ChatAPI {
    /// Mounted at `/v1/workspaces/{w}/channels/{c}`.
    var channelChatRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.post("chats") { request, context -> JSONResponse in
            let (channel, message) = try await postChannelChat(request, context)
            return JSONResponse(ChannelChatResponse(message, in: channel))
        }
        routes.get("chats") { request, context -> JSONResponse in
            let (channel, history) = try await channelHistory(request, context)
            return JSONResponse(array: history.map { ChannelChatResponse($0, in: channel) })
        }
        routes.get("unreads") { request, context in try await channelUnreads(request, context) }
        return routes
    }

    /// Stores a chat of the path's channel (joining it first: `joiningChannel`).
    func postChannelChat(_ request: Request, _ context: AuthenticatedContext) async throws -> (ChannelRef, StoredMessage) {
        let me = context.identity
        let (workspace, channelId): (WorkspaceID, ChannelID) = (try pathID(context, "workspace"), try pathID(context, "conversation"))
        return try await receive(request, context, member: { try await channelToSend(channelId, in: workspace, me) }) { form, text, ready in
            let paths = files.paths(form.files, .channel)
            let created: @Sendable (ChannelRef, StoredMessage) -> ChatEvents.ChannelMessageCreated = { channel, m in
                ChatEvents.ChannelMessageCreated(
                    messageId: m.id, workspaceId: workspace, channelId: channelId, channelName: channel.name, sender: m.sender,
                    content: m.content, files: m.files, createdAt: m.createdAt, parentId: m.parentId, mentions: m.mentionsOrNil,
                    channelAlias: channel.alias, parentName: m.parent?.senderName, parentContent: m.parent?.content
                )
            }
            // Most sends: one statement (ChannelDirectSend.swift).
            if let message = try await postDirectly(text, files: paths, by: me, in: ready, event: { created(ready.channel, $0) }) {
                channelSends.direct.increment()
                return ((ready.channel, message), true)
            }
            channelSends.transaction.increment()
            return try await postgres.withLiveTransaction(logger: logger) { c in
                // Locking the channel row serialises its inserts: unique, commit-ordered times.
                guard let channel = try await messages.channel(channelId, in: workspace, member: me, lock: true, c) else {
                    throw APIError.notFound("channel")
                }
                let (message, isNew) = try await post(text, files: paths, by: me, in: .channel(channel), c) { created(channel, $0) }
                return ((channel, message), isNew)
            }
        }
    }

    /// The path's channel and its history as the query asks (joining it first: `joiningChannel`).
    func channelHistory(_ request: Request, _ context: AuthenticatedContext) async throws -> (ChannelRef, [StoredMessage]) {
        let me = context.identity
        let (workspace, channelId): (WorkspaceID, ChannelID) = (try pathID(context, "workspace"), try pathID(context, "conversation"))
        // A member (WorkSpaceX polls every 2 s): one connection, as before joining by reading.
        let asMember = try await postgres.withLiveConnection { c -> (ChannelRef, [StoredMessage])? in
            guard let channel = try await messages.channel(channelId, in: workspace, member: me, lock: false, c) else { return nil }
            return (channel, try await history(.channel(channel), request, c))
        }
        if let asMember { return asMember }
        // A read that will be refused (an unreadable cursor) joins nothing.
        _ = try Self.milliseconds(request.uri.queryParameters.get("cursor_date"))
        guard let channel = try await joiningChannel(channelId, in: workspace, me) else { throw APIError.notFound("channel") }
        return (channel, try await postgres.withLiveConnection { c in try await history(.channel(channel), request, c) })
    }

    /// The unread count of the path's channel after `after` (0 without one).
    func channelUnreads(_ request: Request, _ context: AuthenticatedContext) async throws -> ChannelUnreadResponse {
        let me = context.identity
        let (workspace, channelId): (WorkspaceID, ChannelID) = (try pathID(context, "workspace"), try pathID(context, "conversation"))
        let after = try Self.milliseconds(request.uri.queryParameters.get("after"))
        return try await postgres.withLiveConnection { c in
            guard let channel = try await messages.channel(channelId, in: workspace, member: me, lock: false, c) else { throw APIError.notFound("channel") }
            // No `after` means the client has nothing local: the contract answers 0.
            var count = 0
            if let after { count = try await messages.unreadCount(.channel(channel), after: after, reader: me, c) }
            return ChannelUnreadResponse(channel_id: channel.id, name: channel.name, count: count)
        }
    }

    /// The channel when `me` is in it. A member of its workspace who is not (per the read models)
    /// joins it first, with the effect of `POST …/join`: chat adds them at once, so this read and
    /// the next ones answer (read-your-writes), and asks the workspace to apply it with a
    /// `chat.channel-join-requested` in the same transaction. The workspace answers with
    /// `workspace.channel-member-joined` (or nothing when they were in), or refuses, and chat takes
    /// the membership back. Concurrent reads join once.
    func joiningChannel(_ id: ChannelID, in workspace: WorkspaceID, _ me: UserID) async throws -> ChannelRef? {
        if let channel = try await postgres.withLiveConnection({ try await messages.channel(id, in: workspace, member: me, lock: false, $0) }) {
            return channel
        }
        return try await postgres.withLiveTransaction(logger: logger) { c in
            if try await messages.joinByReading(id, in: workspace, user: me, c) {
                try await append(ChatEvents.ChannelJoinRequested(userId: me, workspaceId: workspace, channelId: id), c)
            }
            return try await messages.channel(id, in: workspace, member: me, lock: false, c)
        }
    }
}
