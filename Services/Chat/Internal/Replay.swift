import Events
import Foundation

extension ChatInternal {
    /// The body of a replay request: the messages after each cursor, at most `limit` of them.
    public struct ReplayRequest: Codable, Sendable, Equatable {
        public struct Cursor: Codable, Sendable, Equatable {
            /// A channel or DM room id.
            public var conversation_id: UUID
            /// Epoch milliseconds; the replay holds the messages strictly after it.
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

    /// A line of a replay answer (tab-separated, newline-terminated):
    /// - `conversation.removed` TAB `<conversation id>`: an asked conversation the user can no longer
    ///   read (these come first);
    /// - `<channel.message|dm.message>` TAB `<conversation id>` TAB `<message id>` TAB `<created ms>`
    ///   TAB `<JSON object>`: a message, oldest first.
    public enum ReplayLine: Sendable, Equatable {
        case removed(UUID)
        case message(ReplayedMessage)

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
            }
        }

        /// A message line up to its JSON object (which chat appends as it wrote it, then a newline).
        public static func messageHead(kind: ChatEvents.Conversation.Kind, conversationId: UUID, messageId: UUID, createdAtMilliseconds: Int64) -> String {
            "\(ReplayedMessage.type(of: kind))\t\(conversationId.lowercased)\t\(messageId.lowercased)\t\(createdAtMilliseconds)\t"
        }

        /// Parses one line (without its newline); nil when it is malformed.
        public init?(_ line: Substring) {
            let fields = line.split(separator: "\t", maxSplits: 4, omittingEmptySubsequences: false)
            if fields.count == 2, fields[0] == Self.removedType, let conversation = UUID(uuidString: String(fields[1])) {
                self = .removed(conversation)
                return
            }
            let kinds: [Substring: ChatEvents.Conversation.Kind] = ["channel.message": .channel, "dm.message": .dm]
            guard fields.count == 5, let kind = kinds[fields[0]], let conversation = UUID(uuidString: String(fields[1])),
                let id = UUID(uuidString: String(fields[2])), let ms = Int64(fields[3])
            else { return nil }
            self = .message(ReplayedMessage(kind: kind, conversationId: conversation, messageId: id, createdAtMilliseconds: ms, json: String(fields[4])))
        }
    }

    /// A replay answer: the messages, and the asked conversations the user can no longer read.
    public struct ReplayAnswer: Sendable, Equatable {
        public var messages: [ReplayedMessage] = []
        public var removed: [UUID] = []

        public init(messages: [ReplayedMessage] = [], removed: [UUID] = []) {
            self.messages = messages
            self.removed = removed
        }

        /// Parses an answer's body; throws on any malformed line.
        public init(parsing body: String) throws {
            for line in body.split(separator: "\n", omittingEmptySubsequences: true) {
                switch ReplayLine(line) {
                case .removed(let conversation): removed.append(conversation)
                case .message(let message): messages.append(message)
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
