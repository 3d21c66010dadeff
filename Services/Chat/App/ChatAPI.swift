import ChatInternalAPI
import Database
import Events
import Foundation
import Hummingbird
import Logging
import Metrics
import PostgresNIO
import ServiceKit
import Uploads

/// What the chat routes share: the stores, request parsing, and the one way a message is posted.
struct ChatAPI: Sendable {
    let postgres: PostgresClient
    let messages: MessageStore
    let rooms: RoomStore
    let personalRooms: PersonalRooms
    /// Group rooms' icons (served to Smooth's client without a token).
    let roomIcons: ImageDirectory
    let reactions: ReactionStore
    let cursors: ReadCursorStore
    let files: ChatFiles
    let logger: Logger
    /// This process's outbox relay: a channel send wakes it in process while it leads
    /// (`OutboxRelay.wakesInProcess`); nil: every send notifies.
    var relay: OutboxRelay? = nil
    /// Recent senders' channel send contexts (ChannelDirectSend.swift).
    let sendContexts = SendContextCache()
    /// Channel sends by the path they took: one statement (`direct`) or a transaction
    /// (`transaction`: a reply, a possible mention, or a context that changed).
    let channelSends = (
        direct: Counter(label: "chat_channel_sends_total", dimensions: [("path", "direct")]),
        transaction: Counter(label: "chat_channel_sends_total", dimensions: [("path", "transaction")])
    )

    static let source = "chat"

    func add(to router: some RouterMethods<SuiteRequestContext>) {
        // What the gateway asks, for any user: no forwarded identity.
        router.addRoutes(internalRoutes, atPath: RouterPath(ChatInternal.prefix))
        // What clients ask, through the gateway: as the signed-in user.
        let v1 = router.group("v1", context: AuthenticatedContext.self)
        v1.addRoutes(channelChatRoutes, atPath: "workspaces/:workspace/channels/:conversation")
        router.group("gena/v1", context: AuthenticatedContext.self)
            .addRoutes(generationAChannelChatRoutes, atPath: "workspaces/:workspace/channels/:channel")
        v1.addRoutes(dmRoutes, atPath: "workspaces/:workspace/dms")
        v1.addRoutes(personalRoomRoutes, atPath: "rooms")
        for kind in ConversationKind.allCases {
            v1.addRoutes(messageChangeRoutes(kind), atPath: kind.path)
            v1.addRoutes(readCursorRoutes(kind), atPath: kind.path)
        }
        v1.addRoutes(unreadSummaryRoutes, atPath: "workspaces/:workspace")
        v1.addRoutes(searchRoutes, atPath: "workspaces/:workspace")
        v1.addRoutes(fileRoutes, atPath: "static")
        // Smooth's `/chat-server` (docs/smooth-api.md); the edge decides who may call it.
        addSmoothRoutes(to: router)
        addSmoothRoomRoutes(to: router)
    }

    /// The gateway's internal routes: session, replay, reader check.
    var internalRoutes: RouteCollection<SuiteRequestContext> {
        let routes = RouteCollection(context: SuiteRequestContext.self)
        addSessionRoutes(to: routes)
        addReaderCheckRoutes(to: routes)
        return routes
    }

    /// Attachments; mounted at `/v1/static`.
    var fileRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("channelChats/:file") { _, context in try await file(context, .channel) }
        routes.get("dmChats/:file") { _, context in try await file(context, .dm) }
        return routes
    }

    /// An attachment, to members of the conversation its message is in (anyone else: E13).
    private func file(_ context: AuthenticatedContext, _ prefix: ChatFiles.Prefix) async throws -> Response {
        let me = context.identity
        // Names keep the client's (sanitised) file name, so clients percent-encode non-ASCII ones.
        let raw = context.parameters.get("file") ?? ""
        let name = raw.removingPercentEncoding ?? raw
        guard ChatFiles.isStoredName(name) else { throw APIError.notFound("file") }
        guard try await postgres.withLiveConnection({ try await messages.canSee(file: prefix.rawValue + name, user: me, $0) }) else {
            throw APIError.notFound("file")
        }
        return try await files.response(for: name, context: context)
    }

    /// Reads the message form (streaming attachments to the volume) after a cheap membership
    /// check (nil: not a member), so a stranger's upload is refused before it is written; then
    /// runs `store` with what the check read, and removes the attachments again when it fails or
    /// did not keep them (a retried send).
    func receive<Member: Sendable, T: Sendable>(
        _ request: Request, _ context: AuthenticatedContext, member: () async throws -> Member?,
        _ store: @Sendable (MessageForm, MessageDraft, Member) async throws -> (T, keptFiles: Bool)
    ) async throws -> T {
        guard let checked = try await member() else { throw APIError.notFound("conversation") }
        let form = try await MessageForm.read(request, context: context, files: files)
        do {
            let (result, keptFiles) = try await store(form, try form.validated(), checked)
            if !keptFiles { files.remove(form.files) }
            return result
        } catch {
            files.remove(form.files)
            throw error
        }
    }

    func pathID<Entity>(_ context: AuthenticatedContext, _ name: String) throws -> Identifier<Entity> { try context.pathID(name) }

    /// A conversation's history as the query asks: by `cursor_date` (everything newer, the
    /// contract's default) or, with `page` / `size`, one page newest-first (oldest first within it).
    func history(_ conversation: Conversation, _ request: Request, _ c: PostgresConnection) async throws -> [StoredMessage] {
        let query = request.uri.queryParameters
        let (page, size) = (query.get("page"), query.get("size"))
        guard page != nil || size != nil else {
            return try await messages.history(conversation, after: try Self.milliseconds(query.get("cursor_date")), c)
        }
        guard query.get("cursor_date").map(\.isEmpty) ?? true else { throw APIError.badRequest("cursor_date and page are exclusive") }
        guard let page = HistoryPage(page: page, size: size, defaultSize: 50) else {
            throw APIError.badRequest("page ≥ 0 and size 1…\(HistoryPage.maximumSize), page × size ≤ \(HistoryPage.maximumDepth)")
        }
        return try await messages.page(conversation, page, c)
    }

    /// A `cursor_date` / `after` value in epoch milliseconds: absent or empty is nil; otherwise the
    /// contract's format (E11 when unreadable).
    static func milliseconds(_ text: String?) throws -> Int64? {
        guard let text, !text.isEmpty else { return nil }
        guard let milliseconds = Timestamp.parseMilliseconds(text) else { throw APIError.badRequest("dates are yyyy-MM-ddTHH:mm:ss.SSSZ") }
        return milliseconds
    }

    /// Posts into a conversation the caller already locked in this transaction: a retried send
    /// (same `nonce`) returns the first message (`isNew` false: the retry's own uploads are the
    /// caller's to drop); otherwise the message is stored and `event` (built from it) is appended
    /// to the outbox.
    func post(
        _ draft: MessageDraft, files: [String], by sender: UserID, in conversation: Conversation,
        _ c: PostgresConnection, event: (StoredMessage) -> any EventPayload
    ) async throws -> (message: StoredMessage, isNew: Bool) {
        if let nonce = draft.nonce, let earlier = try await messages.message(sender: sender, nonce: nonce, in: conversation, c) {
            return (earlier, false)
        }
        if let parent = draft.parentId, try await !messages.isLive(parent, in: conversation, c) {
            throw APIError.notFound("parent message")
        }
        let mentions = try await Mentions.resolve(in: draft.content, conversation: conversation, c, logger: logger)
        let id = MessageID.generate()
        let (time, profile) = try await messages.insert(id, in: conversation, sender: sender, draft: draft, files: files, mentions: mentions, c)
        var message = StoredMessage(
            id: id, sender: profile, content: draft.content, files: files, createdAt: time, parentId: draft.parentId, mentions: mentions)
        if let parent = draft.parentId { message.parent = try await messages.parents([parent], c)[parent] }
        try await append(event(message), c)
        return (message, true)
    }

    func append<P: EventPayload>(_ payload: P, _ c: PostgresConnection) async throws {
        try await Outbox.append(CloudEvent(source: Self.source, data: payload), on: c, logger: logger)
    }
}
