import Database
import Events
import Foundation
import Hummingbird
import Logging
import PostgresNIO
import ServiceKit

/// What the chat routes share: the stores, request parsing, and the one way a message is posted.
struct ChatAPI: Sendable {
    let postgres: PostgresClient
    let messages: MessageStore
    let rooms: RoomStore
    let logger: Logger

    static let source = "chat"

    func add(to router: Router<SuiteRequestContext>) {
        addChannelChatRoutes(to: router)
        addDMRoutes(to: router)
    }

    func user(_ request: Request) throws -> UserID {
        guard let id = UserID(try request.authenticatedUser()) else { throw APIError.authenticationFailed }
        return id
    }

    /// A path id; one that is not a UUID names nothing (E13).
    func pathID<Entity>(_ context: SuiteRequestContext, _ name: String, as: Identifier<Entity>.Type = Identifier<Entity>.self) throws -> Identifier<Entity> {
        guard let id = context.parameters.get(name).flatMap(Identifier<Entity>.init) else { throw APIError.notFound(name) }
        return id
    }

    /// A `cursor_date` / `after` value in epoch milliseconds: absent or empty is nil; otherwise the
    /// contract's format (E11 when unreadable).
    static func milliseconds(_ text: String?) throws -> Int64? {
        guard let text, !text.isEmpty else { return nil }
        guard let milliseconds = Timestamp.parseMilliseconds(text) else { throw APIError.badRequest("dates are yyyy-MM-ddTHH:mm:ss.SSSZ") }
        return milliseconds
    }

    /// Posts into a conversation the caller already locked in this transaction: a retried send
    /// (same `nonce`) returns the first message; otherwise the message is stored and `event` (built
    /// from it) is appended to the outbox. Returns the message and whether it is new.
    func post(_ form: (content: String?, nonce: String?), by sender: UserID, in conversation: Conversation, _ c: PostgresConnection,
              event: (StoredMessage) -> any EventPayload) async throws -> StoredMessage {
        if let nonce = form.nonce, let earlier = try await messages.message(sender: sender, nonce: nonce, in: conversation, c) { return earlier }
        let id = MessageID.generate()
        let time = try await messages.insert(id, in: conversation, sender: sender, content: form.content, files: [], nonce: form.nonce, c)
        let message = StoredMessage(id: id, sender: try await messages.sender(sender, c), content: form.content, files: [], createdAt: time)
        try await append(event(message), c)
        return message
    }

    private func append<P: EventPayload>(_ payload: P, _ c: PostgresConnection) async throws {
        try await Outbox.append(CloudEvent(source: Self.source, data: payload), on: c, logger: logger)
    }
}
