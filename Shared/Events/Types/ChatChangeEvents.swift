import Foundation

extension ChatEvents {
    /// The conversation a message lives in: a channel, or a DM room with its participants (so a
    /// consumer can deliver a change without any other lookup). Keys the change events.
    public struct Conversation: Codable, Sendable, Equatable {
        public enum Kind: String, Codable, Sendable {
            case channel
            case dm
        }
        public var kind: Kind
        /// The channel id or DM room id.
        public var id: UUID
        /// A DM room's participants (one for a note-to-self room); nil for a channel.
        public var participants: [UserID]?
        /// The conversation's integer alias for legacy clients, when it has one.
        public var alias: Int64?

        public init(kind: Kind, id: UUID, participants: [UserID]?, alias: Int64? = nil) {
            self.kind = kind
            self.id = id
            self.participants = participants
            self.alias = alias
        }

        public static func channel(_ id: ChannelID, alias: Int64? = nil) -> Self { Self(kind: .channel, id: id.uuid, participants: nil, alias: alias) }
        public static func room(_ id: RoomID, participants: [UserID], alias: Int64? = nil) -> Self {
            Self(kind: .dm, id: id.uuid, participants: participants, alias: alias)
        }

        public var key: String { id.lowercased }

        enum CodingKeys: String, CodingKey { case kind, id, participants, alias }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(kind, forKey: .kind)
            try c.encodeLowercased(id, forKey: .id)
            try c.encodeIfPresent(participants, forKey: .participants)
            try c.encodeIfPresent(alias, forKey: .alias)
        }
    }

    /// A reaction emoji with who reacted, as messages carry them (first reaction first).
    public struct Reaction: Codable, Sendable, Equatable {
        public var emoji: String
        public var count: Int
        public var users: [UserID]

        public init(emoji: String, count: Int, users: [UserID]) {
            self.emoji = emoji
            self.count = count
            self.users = users
        }
    }

    /// The sender changed a message's text; keyed by the conversation (ordered with its messages).
    public struct MessageEdited: EventPayload {
        public static let eventType = "chat.message.edited"
        public static let topic = Topic.chatMessage
        public var messageId: MessageID
        /// The conversation's workspace; nil for a personal room.
        public var workspaceId: WorkspaceID?
        public var conversation: Conversation
        public var senderId: UserID
        public var content: String?
        public var mentions: [UserID]?
        public var editedAt: Date
        /// The sender's integer alias for legacy clients, when chat knows it.
        public var senderAlias: Int64?
        public var subject: String { conversation.key }

        public init(
            messageId: MessageID, workspaceId: WorkspaceID?, conversation: Conversation, senderId: UserID, content: String?,
            mentions: [UserID]?, editedAt: Date, senderAlias: Int64? = nil
        ) {
            self.senderAlias = senderAlias
            self.messageId = messageId
            self.workspaceId = workspaceId
            self.conversation = conversation
            self.senderId = senderId
            self.content = content
            self.mentions = mentions
            self.editedAt = Timestamp.truncated(editedAt)
        }
    }

    /// The sender deleted a message (its text and files are gone); keyed by the conversation.
    public struct MessageDeleted: EventPayload {
        public static let eventType = "chat.message.deleted"
        public static let topic = Topic.chatMessage
        public var messageId: MessageID
        /// The conversation's workspace; nil for a personal room.
        public var workspaceId: WorkspaceID?
        public var conversation: Conversation
        public var senderId: UserID
        public var deletedAt: Date
        public var subject: String { conversation.key }

        public init(messageId: MessageID, workspaceId: WorkspaceID?, conversation: Conversation, senderId: UserID, deletedAt: Date) {
            self.messageId = messageId
            self.workspaceId = workspaceId
            self.conversation = conversation
            self.senderId = senderId
            self.deletedAt = Timestamp.truncated(deletedAt)
        }
    }

    /// A message's reactions after someone added or removed one; keyed by the conversation.
    public struct ReactionsChanged: EventPayload {
        public static let eventType = "chat.message.reactions-changed"
        public static let topic = Topic.chatMessage
        public var messageId: MessageID
        /// The conversation's workspace; nil for a personal room.
        public var workspaceId: WorkspaceID?
        public var conversation: Conversation
        /// Who added or removed `emoji`.
        public var userId: UserID
        public var emoji: String
        public var added: Bool
        public var reactions: [Reaction]
        public var subject: String { conversation.key }

        public init(
            messageId: MessageID, workspaceId: WorkspaceID?, conversation: Conversation, userId: UserID, emoji: String, added: Bool,
            reactions: [Reaction]
        ) {
            self.messageId = messageId
            self.workspaceId = workspaceId
            self.conversation = conversation
            self.userId = userId
            self.emoji = emoji
            self.added = added
            self.reactions = reactions
        }
    }

    /// `chat.read.v1`, keyed by user id: a user's read cursor in a conversation moved forward
    /// (their other devices and the unread badges follow it).
    public struct ReadCursorMoved: EventPayload {
        public static let eventType = "chat.read-cursor.moved"
        public static let topic = Topic.chatRead
        public var userId: UserID
        /// The conversation's workspace; nil for a personal room.
        public var workspaceId: WorkspaceID?
        public var conversation: Conversation
        /// Everything up to and including this time is read.
        public var readAt: Date
        public var subject: String { userId.description }

        public init(userId: UserID, workspaceId: WorkspaceID?, conversation: Conversation, readAt: Date) {
            self.userId = userId
            self.workspaceId = workspaceId
            self.conversation = conversation
            self.readAt = Timestamp.truncated(readAt)
        }
    }

    /// `chat.read.v1`, keyed by user id: a member of the workspace read or wrote to a channel
    /// they are not in (clients that explore channels have no join call), and chat let them in
    /// on its read model. The workspace service applies it as `POST …/join` does (once; a
    /// `workspace.channel-member-joined` when new) or answers `workspace.channel-join-refused`.
    public struct ChannelJoinRequested: EventPayload {
        public static let eventType = "chat.channel-join-requested"
        public static let topic = Topic.chatRead
        public var userId: UserID
        public var workspaceId: WorkspaceID
        public var channelId: ChannelID
        public var subject: String { userId.description }

        public init(userId: UserID, workspaceId: WorkspaceID, channelId: ChannelID) {
            self.userId = userId
            self.workspaceId = workspaceId
            self.channelId = channelId
        }
    }
}
