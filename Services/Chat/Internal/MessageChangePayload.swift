import ClientContract
import Events
import Foundation

/// A change to a message a client already has: an edit or a deletion. One writer for both paths
/// that show it to clients — chat's replay (`ChatInternal.ReplayLine.change`) and the gateway's live
/// dispatch of `ChatEvents.MessageEdited` / `ChatEvents.MessageDeleted` — so a resumed session sees
/// exactly what a live one would have.
///
/// JSON, keys in this order: `conversation_id`, `kind` (`channel` | `dm`), `chat_id`, `user_id`
/// (the sender), then for an edit `content` (a string, or null when only files are left),
/// `mentions` (only when non-empty) and `editedAt`; for a deletion `deletedAt`. Ids in lower case,
/// times as `Timestamp.format`.
public struct MessageChangePayload: JSONWritable, Sendable, Equatable {
    public enum Change: String, Sendable, Equatable {
        case edited = "message.edited"
        case deleted = "message.deleted"
    }

    public var change: Change
    public var kind: ChatEvents.Conversation.Kind
    /// The channel id or DM room id.
    public var conversationId: UUID
    public var messageId: UUID
    public var senderId: UserID
    /// The new text (edits only; nil: no text, the message keeps only files).
    public var content: String?
    /// Whom the new text mentions (edits only; nil or empty: nobody).
    public var mentions: [UserID]?
    /// When the message was edited or deleted.
    public var at: Date

    public init(
        change: Change, kind: ChatEvents.Conversation.Kind, conversationId: UUID, messageId: UUID, senderId: UserID, content: String? = nil,
        mentions: [UserID]? = nil, at: Date
    ) {
        self.change = change
        self.kind = kind
        self.conversationId = conversationId
        self.messageId = messageId
        self.senderId = senderId
        self.content = content
        self.mentions = mentions
        self.at = at
    }

    public init(edited event: ChatEvents.MessageEdited) {
        self.init(
            change: .edited, kind: event.conversation.kind, conversationId: event.conversation.id, messageId: event.messageId.uuid,
            senderId: event.senderId, content: event.content, mentions: event.mentions, at: event.editedAt)
    }

    public init(deleted event: ChatEvents.MessageDeleted) {
        self.init(
            change: .deleted, kind: event.conversation.kind, conversationId: event.conversation.id, messageId: event.messageId.uuid,
            senderId: event.senderId, at: event.deletedAt)
    }

    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("conversation_id")
        json.string(conversationId.lowercased)
        json.key("kind")
        json.string(kind.rawValue)
        json.key("chat_id")
        json.string(messageId.lowercased)
        json.member("user_id", senderId)
        switch change {
        case .edited:
            json.key("content")
            if let content { json.string(content) } else { json.null() }
            if let mentions, !mentions.isEmpty { json.member("mentions", ids: mentions) }
            json.member("editedAt", Timestamp.format(at))
        case .deleted:
            json.member("deletedAt", Timestamp.format(at))
        }
        json.endObject()
    }
}
