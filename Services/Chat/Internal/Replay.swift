import ClientContract
import Events
import Foundation
import NIOCore

extension ChatInternal {
    /// The body of a replay request: the messages after each cursor and the edits and deletions
    /// since it of the messages at or before it, at most `limit` of them together.
    public struct ReplayRequest: Codable, Sendable, Equatable {
        public struct Cursor: Codable, Sendable, Equatable {
            /// A channel or DM room id.
            public var conversation_id: UUID
            /// Epoch milliseconds; the replay holds the messages created strictly after it, and the
            /// older messages edited or deleted strictly after it.
            public var after_ms: Int64

            public init(conversation_id: UUID, after_ms: Int64) {
                self.conversation_id = conversation_id
                self.after_ms = after_ms
            }

            // Ids in lower case, as the suite prints them everywhere (decoding takes any case).
            public func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(conversation_id.lowercased, forKey: .conversation_id)
                try container.encode(after_ms, forKey: .after_ms)
            }
        }

        public var cursors: [Cursor]
        public var limit: Int

        public init(cursors: [Cursor], limit: Int) {
            self.cursors = cursors
            self.limit = limit
        }

        /// Whether chat takes it (else 400).
        public var isValid: Bool { cursors.count <= ChatInternal.Replay.maxCursors && ChatInternal.Replay.limits.contains(limit) }
    }

    /// One replayed message: its dispatch type, conversation, id, time and REST JSON object.
    public struct ReplayedMessage: Sendable, Equatable {
        public var kind: ChatEvents.Conversation.Kind
        public var conversationId: UUID
        public var messageId: UUID
        public var createdAtMilliseconds: Int64
        /// The message as the REST API shows it (`ChannelChat` or `DMChat`).
        public var json: String

        public init(kind: ChatEvents.Conversation.Kind, conversationId: UUID, messageId: UUID, createdAtMilliseconds: Int64, json: String) {
            self.kind = kind
            self.conversationId = conversationId
            self.messageId = messageId
            self.createdAtMilliseconds = createdAtMilliseconds
            self.json = json
        }

        /// The native protocol's dispatch type: `channel.message` or `dm.message`.
        public var type: String { Self.type(of: kind) }

        public static func type(of kind: ChatEvents.Conversation.Kind) -> String {
            switch kind {
            case .channel: "channel.message"
            case .dm: "dm.message"
            }
        }
    }

    /// One replayed change to a message created at or before its conversation's cursor: an edit or
    /// a deletion after the cursor, with the change's time and its `MessageChangePayload` JSON.
    public struct ReplayedChange: Sendable, Equatable {
        public var change: MessageChangePayload.Change
        public var conversationId: UUID
        public var messageId: UUID
        /// When the message was edited or deleted (epoch milliseconds).
        public var atMilliseconds: Int64
        /// The change as `MessageChangePayload` writes it.
        public var json: String

        public init(change: MessageChangePayload.Change, conversationId: UUID, messageId: UUID, atMilliseconds: Int64, json: String) {
            self.change = change
            self.conversationId = conversationId
            self.messageId = messageId
            self.atMilliseconds = atMilliseconds
            self.json = json
        }

        /// The change of `payload`, its JSON written by it.
        public init(_ payload: MessageChangePayload) {
            self.init(
                change: payload.change, conversationId: payload.conversationId, messageId: payload.messageId,
                atMilliseconds: Timestamp.milliseconds(payload.at), json: String(buffer: payload.jsonBuffer))
        }

        /// The native protocol's dispatch type: `message.edited` or `message.deleted`.
        public var type: String { change.rawValue }
    }

    /// A line of a replay answer (tab-separated, newline-terminated):
    /// - `conversation.removed` TAB `<conversation id>`: an asked conversation the user can no longer
    ///   read (these come first);
    /// - `<channel.message|dm.message>` TAB `<conversation id>` TAB `<message id>` TAB `<created ms>`
    ///   TAB `<JSON object>`: a message, oldest first (after the removals);
    /// - `<message.edited|message.deleted>` TAB `<conversation id>` TAB `<message id>` TAB
    ///   `<change ms>` TAB `<MessageChangePayload JSON>`: a change to a message the client already
    ///   had, by change time (after the messages).
    public enum ReplayLine: Sendable, Equatable {
        case removed(UUID)
        case message(ReplayedMessage)
        case change(ReplayedChange)

        public static let removedType = "conversation.removed"

        /// The line, newline included.
        public var text: String {
            switch self {
            case .removed(let conversation):
                "\(Self.removedType)\t\(conversation.lowercased)\n"
            case .message(let message):
                Self.messageHead(
                    kind: message.kind, conversationId: message.conversationId, messageId: message.messageId,
                    createdAtMilliseconds: message.createdAtMilliseconds) + message.json + "\n"
            case .change(let change):
                Self.changeHead(change.change, conversationId: change.conversationId, messageId: change.messageId, atMilliseconds: change.atMilliseconds)
                    + change.json + "\n"
            }
        }

        /// A message line up to its JSON object (which chat appends as it wrote it, then a newline).
        public static func messageHead(kind: ChatEvents.Conversation.Kind, conversationId: UUID, messageId: UUID, createdAtMilliseconds: Int64) -> String {
            "\(ReplayedMessage.type(of: kind))\t\(conversationId.lowercased)\t\(messageId.lowercased)\t\(createdAtMilliseconds)\t"
        }

        /// A change line up to its JSON object (which chat appends as it wrote it, then a newline).
        public static func changeHead(_ change: MessageChangePayload.Change, conversationId: UUID, messageId: UUID, atMilliseconds: Int64) -> String {
            "\(change.rawValue)\t\(conversationId.lowercased)\t\(messageId.lowercased)\t\(atMilliseconds)\t"
        }

        /// Parses one line (without its newline); nil when it is malformed.
        public init?(_ line: Substring) {
            let fields = line.split(separator: "\t", maxSplits: 4, omittingEmptySubsequences: false)
            if fields.count == 2, fields[0] == Self.removedType, let conversation = UUID(parsing: String(fields[1])) {
                self = .removed(conversation)
                return
            }
            guard fields.count == 5, let conversation = UUID(parsing: String(fields[1])), let id = UUID(parsing: String(fields[2])),
                let ms = Int64(fields[3])
            else { return nil }
            let kinds: [Substring: ChatEvents.Conversation.Kind] = ["channel.message": .channel, "dm.message": .dm]
            if let kind = kinds[fields[0]] {
                self = .message(ReplayedMessage(kind: kind, conversationId: conversation, messageId: id, createdAtMilliseconds: ms, json: String(fields[4])))
            } else if let change = MessageChangePayload.Change(rawValue: String(fields[0])) {
                self = .change(ReplayedChange(change: change, conversationId: conversation, messageId: id, atMilliseconds: ms, json: String(fields[4])))
            } else {
                return nil
            }
        }
    }

    /// A replay answer: the messages, the asked conversations the user can no longer read, and the
    /// changes (edits, deletions) to messages the client already had.
    public struct ReplayAnswer: Sendable, Equatable {
        public var messages: [ReplayedMessage] = []
        public var removed: [UUID] = []
        public var changes: [ReplayedChange] = []

        public init(messages: [ReplayedMessage] = [], removed: [UUID] = [], changes: [ReplayedChange] = []) {
            self.messages = messages
            self.removed = removed
            self.changes = changes
        }

        /// Parses an answer's body; throws on any malformed line.
        public init(parsing body: String) throws {
            for line in body.split(separator: "\n", omittingEmptySubsequences: true) {
                switch ReplayLine(line) {
                case .removed(let conversation): removed.append(conversation)
                case .message(let message): messages.append(message)
                case .change(let change): changes.append(change)
                case nil: throw MalformedReplay()
                }
            }
        }
    }

    /// A replay answer chat would not write.
    public struct MalformedReplay: Error, CustomStringConvertible {
        public init() {}
        public var description: String { "chat answered a malformed replay" }
    }
}
