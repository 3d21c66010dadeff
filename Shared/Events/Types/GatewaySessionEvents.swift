import Foundation

extension GatewayEvents {
    /// A native session's resume point (`gateway.session.v1`, keyed by session id), written when
    /// its connection ends and when its gateway shuts down. Any gateway can resume the session
    /// from it: the cursor of each conversation as of a sequence number `seq` is its `base`
    /// cursor advanced by the `marks` with `seq` ≤ that number; messages after the cursors are
    /// replayed from chat's history. `SessionClosed` ends resumability.
    public struct SessionCheckpoint: EventPayload {
        public static let eventType = "gateway.session.checkpoint"
        public static let topic = Topic.gatewaySession
        public var sessionId: String
        public var gatewayId: String
        public var userId: UserID
        public var openedAt: Date
        /// The last sequence number the session dispatched.
        public var seq: Int
        /// Marks with a sequence number ≤ `baseSeq` are folded into the base cursors; a resume
        /// from an older `seq` is refused.
        public var baseSeq: Int
        public var conversations: [ConversationCursor]
        public var marks: [DispatchMark]
        public var checkpointedAt: Date
        /// Whether a client is connected to the session at `gatewayId` (a resume: true) or not
        /// (its connection ended, or the gateway shut down: false). Absent from older gateways.
        public var attached: Bool?
        /// The gateway process holding an attached session (see `SessionOpened.gatewayInstance`).
        public var gatewayInstance: String?
        public var subject: String { sessionId }

        public init(
            sessionId: String, gatewayId: String, userId: UserID, openedAt: Date, seq: Int, baseSeq: Int,
            conversations: [ConversationCursor], marks: [DispatchMark], checkpointedAt: Date, attached: Bool? = nil, gatewayInstance: String? = nil
        ) {
            self.attached = attached
            self.gatewayInstance = gatewayInstance
            self.sessionId = sessionId
            self.gatewayId = gatewayId
            self.userId = userId
            self.openedAt = Timestamp.truncated(openedAt)
            self.seq = seq
            self.baseSeq = baseSeq
            self.conversations = conversations
            self.marks = marks
            self.checkpointedAt = Timestamp.truncated(checkpointedAt)
        }
    }

    /// Where a session stands in one conversation: after the message created at `createdAt`
    /// (`afterMessage`; a conversation's message times are strictly increasing), or — when
    /// nothing was dispatched there yet — from `createdAt` (the subscription time) on.
    public struct ConversationCursor: Codable, Sendable, Equatable {
        public var conversationId: UUID
        public var kind: ChatEvents.Conversation.Kind
        public var createdAt: Date
        public var afterMessage: Bool
        /// The conversation's workspace, when known (absent in checkpoints of earlier gateways).
        public var workspaceId: UUID?

        public init(conversationId: UUID, kind: ChatEvents.Conversation.Kind, createdAt: Date, afterMessage: Bool, workspaceId: UUID? = nil) {
            self.conversationId = conversationId
            self.kind = kind
            self.createdAt = Timestamp.truncated(createdAt)
            self.afterMessage = afterMessage
            self.workspaceId = workspaceId
        }

        enum CodingKeys: String, CodingKey { case conversationId, kind, createdAt, afterMessage, workspaceId }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeLowercased(conversationId, forKey: .conversationId)
            try c.encode(kind, forKey: .kind)
            try c.encode(createdAt, forKey: .createdAt)
            try c.encode(afterMessage, forKey: .afterMessage)
            try c.encodeLowercasedIfPresent(workspaceId, forKey: .workspaceId)
        }
    }

    /// A message dispatched to a session with sequence number `seq`.
    public struct DispatchMark: Codable, Sendable, Equatable {
        public var seq: Int
        public var conversationId: UUID
        public var createdAt: Date
        public var messageId: MessageID

        public init(seq: Int, conversationId: UUID, createdAt: Date, messageId: MessageID) {
            self.seq = seq
            self.conversationId = conversationId
            self.createdAt = createdAt
            self.messageId = messageId
        }

        enum CodingKeys: String, CodingKey { case seq, conversationId, createdAt, messageId }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(seq, forKey: .seq)
            try c.encodeLowercased(conversationId, forKey: .conversationId)
            try c.encode(createdAt, forKey: .createdAt)
            try c.encode(messageId, forKey: .messageId)
        }
    }

    /// A user is typing in a conversation (`gateway.typing.v1`, keyed by the conversation id so
    /// chat-fanout routes it like a message). Ephemeral: never stored or replayed.
    public struct TypingStarted: EventPayload {
        public static let eventType = "gateway.typing.started"
        public static let topic = Topic.gatewayTyping
        public var conversationId: UUID
        public var kind: ChatEvents.Conversation.Kind
        public var userId: UserID
        public var startedAt: Date
        /// The name the typing client shows (a STOMP client's `content`, ≤ 64 bytes); absent
        /// from native sessions, whose receivers know the member by id.
        public var name: String?
        public var subject: String { conversationId.lowercased }

        public init(conversationId: UUID, kind: ChatEvents.Conversation.Kind, userId: UserID, startedAt: Date, name: String? = nil) {
            self.conversationId = conversationId
            self.kind = kind
            self.userId = userId
            self.startedAt = Timestamp.truncated(startedAt)
            self.name = name
        }

        enum CodingKeys: String, CodingKey { case conversationId, kind, userId, startedAt, name }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeLowercased(conversationId, forKey: .conversationId)
            try c.encode(kind, forKey: .kind)
            try c.encode(userId, forKey: .userId)
            try c.encode(startedAt, forKey: .startedAt)
            try c.encodeIfPresent(name, forKey: .name)
        }
    }

    /// A STOMP client's community signal (`/kafka/community-signaling`, contract §2.2: a member
    /// is about to enter a community's voice room), on `gateway.typing.v1` keyed by the community
    /// (workspace) id, so chat-fanout routes it to the gateways with subscribers in the
    /// community. Ephemeral: never stored or replayed.
    public struct CommunitySignal: EventPayload {
        public static let eventType = "gateway.community.signal"
        public static let topic = Topic.gatewayTyping
        public var communityId: UUID
        public var userId: UserID
        /// The client's signal type (`before-enter`; ≤ 32 bytes of `[a-z-]`).
        public var signal: String
        public var at: Date
        public var subject: String { communityId.lowercased }

        public init(communityId: UUID, userId: UserID, signal: String, at: Date) {
            self.communityId = communityId
            self.userId = userId
            self.signal = signal
            self.at = Timestamp.truncated(at)
        }

        enum CodingKeys: String, CodingKey { case communityId, userId, signal, at }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeLowercased(communityId, forKey: .communityId)
            try c.encode(userId, forKey: .userId)
            try c.encode(signal, forKey: .signal)
            try c.encode(at, forKey: .at)
        }
    }
}
