import Foundation

/// `chat.message.v1`, keyed by channel id (or DM room id): messages as stored. `chat-fanout`
/// delivers these to gateways; the payload carries everything a client's `ChannelChat` shows.
public enum ChatEvents {
    /// The sender as clients display them (from `chat`'s profile projection when sent).
    public struct Sender: Codable, Sendable, Equatable {
        public var userId: UserID
        public var email: String
        public var nickname: String
        public var profileImage: String?
        /// The sender's integer alias for legacy clients (nil when chat does not know it yet).
        public var alias: Int64?

        public init(userId: UserID, email: String, nickname: String, profileImage: String?, alias: Int64? = nil) {
            self.userId = userId
            self.email = email
            self.nickname = nickname
            self.profileImage = profileImage
            self.alias = alias
        }
    }

    public struct ChannelMessageCreated: EventPayload {
        public static let eventType = "chat.channel-message.created"
        public static let topic = Topic.chatMessage
        public var messageId: MessageID
        public var workspaceId: WorkspaceID
        public var channelId: ChannelID
        public var channelName: String
        public var sender: Sender
        public var content: String?
        public var files: [String]
        public var createdAt: Date
        /// The message this one replies to (same channel), if any.
        public var parentId: MessageID?
        /// Users mentioned with `@nickname` or `<@user-id>` (members of the channel only); nil for none.
        public var mentions: [UserID]?
        /// The channel's integer alias for legacy clients, when it has one.
        public var channelAlias: Int64?
        /// For a reply: the parent's sender's nickname and its text when the reply was sent (what
        /// Smooth's reply frames show).
        public var parentName: String?
        public var parentContent: String?
        public var subject: String { channelId.description }

        public init(
            messageId: MessageID, workspaceId: WorkspaceID, channelId: ChannelID, channelName: String, sender: Sender,
            content: String?, files: [String], createdAt: Date, parentId: MessageID? = nil, mentions: [UserID]? = nil, channelAlias: Int64? = nil,
            parentName: String? = nil, parentContent: String? = nil
        ) {
            self.channelAlias = channelAlias
            self.parentName = parentName
            self.parentContent = parentContent
            self.messageId = messageId
            self.workspaceId = workspaceId
            self.channelId = channelId
            self.channelName = channelName
            self.sender = sender
            self.content = content
            self.files = files
            self.createdAt = Timestamp.truncated(createdAt)
            self.parentId = parentId
            self.mentions = mentions
        }
    }
}

extension ChatEvents {
    /// A direct message, keyed by room id; `participants` are the room's users (two in a
    /// workspace room, one for a note-to-self room, up to a group's size in a personal room), so
    /// delivery needs no other lookup.
    public struct DirectMessageCreated: EventPayload {
        public static let eventType = "chat.dm-message.created"
        public static let topic = Topic.chatMessage
        public var messageId: MessageID
        /// The room's workspace; nil for a personal room (friends or a group, outside workspaces).
        public var workspaceId: WorkspaceID?
        public var roomId: RoomID
        /// The room's integer alias for legacy clients (Smooth's room id), when it has one.
        public var roomAlias: Int64?
        /// A group room's name (nil for two-person rooms).
        public var roomName: String?
        public var participants: [UserID]
        public var sender: Sender
        public var content: String?
        public var files: [String]
        public var createdAt: Date
        /// The message this one replies to (same room), if any.
        public var parentId: MessageID?
        /// Participants mentioned in the content; nil for none.
        public var mentions: [UserID]?
        /// For a reply, as in `ChannelMessageCreated`.
        public var parentName: String?
        public var parentContent: String?
        public var subject: String { roomId.description }

        public init(
            messageId: MessageID, workspaceId: WorkspaceID?, roomId: RoomID, participants: [UserID], sender: Sender,
            content: String?, files: [String], createdAt: Date, parentId: MessageID? = nil, mentions: [UserID]? = nil,
            parentName: String? = nil, parentContent: String? = nil, roomAlias: Int64? = nil, roomName: String? = nil
        ) {
            self.roomAlias = roomAlias
            self.roomName = roomName
            self.parentName = parentName
            self.parentContent = parentContent
            self.messageId = messageId
            self.workspaceId = workspaceId
            self.roomId = roomId
            self.participants = participants
            self.sender = sender
            self.content = content
            self.files = files
            self.createdAt = Timestamp.truncated(createdAt)
            self.parentId = parentId
            self.mentions = mentions
        }
    }
}

// The message events, written once per message (`EventPayload.writeJSON`): members in sorted key
// order, as `EventCoding.encoder()` writes them (`EventWriterTests` compares the two byte for byte).
extension ChatEvents.Sender {
    func writeJSON(to json: inout JSONWriter) {
        json.beginObject()
        json.member("alias", alias)
        json.member("email", email)
        json.member("nickname", nickname)
        json.member("profileImage", profileImage)
        json.member("userId", userId)
        json.endObject()
    }
}

extension JSONWriter {
    /// The members both message events have, from `content` to `parentName` (in sorted key order
    /// they come together).
    fileprivate static func messageMembers(
        content: String?, createdAt: Date, files: [String], mentions: [UserID]?, messageId: MessageID, parentContent: String?,
        parentId: MessageID?, parentName: String?, into json: inout JSONWriter
    ) {
        json.member("content", content)
        json.member("createdAt", Timestamp.format(createdAt))
        json.member("files", strings: files)
        if let mentions { json.member("mentions", ids: mentions) }
        json.member("messageId", messageId)
        json.member("parentContent", parentContent)
        json.member("parentId", parentId)
        json.member("parentName", parentName)
    }
}

extension ChatEvents.ChannelMessageCreated {
    public func writeJSON(to json: inout JSONWriter) -> Bool {
        json.beginObject()
        json.member("channelAlias", channelAlias)
        json.member("channelId", channelId)
        json.member("channelName", channelName)
        JSONWriter.messageMembers(
            content: content, createdAt: createdAt, files: files, mentions: mentions, messageId: messageId, parentContent: parentContent,
            parentId: parentId, parentName: parentName, into: &json)
        json.key("sender")
        sender.writeJSON(to: &json)
        json.member("workspaceId", workspaceId)
        json.endObject()
        return true
    }
}

extension ChatEvents.DirectMessageCreated {
    public func writeJSON(to json: inout JSONWriter) -> Bool {
        json.beginObject()
        JSONWriter.messageMembers(
            content: content, createdAt: createdAt, files: files, mentions: mentions, messageId: messageId, parentContent: parentContent,
            parentId: parentId, parentName: parentName, into: &json)
        json.member("participants", ids: participants)
        json.member("roomAlias", roomAlias)
        json.member("roomId", roomId)
        json.member("roomName", roomName)
        json.key("sender")
        sender.writeJSON(to: &json)
        json.member("workspaceId", workspaceId)
        json.endObject()
        return true
    }
}
