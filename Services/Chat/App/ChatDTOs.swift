import Events
import Foundation
import Hummingbird
import ServiceKit

// Response shapes of the client contract §1.1: snake_case ids, camelCase fields, `files` always
// an array, dates yyyy-MM-ddTHH:mm:ss.SSSZ.

extension MemberSummary {
    init(_ sender: ChatEvents.Sender) {
        self.init(userId: sender.userId, email: sender.email, nickname: sender.nickname, profileImage: sender.profileImage)
    }
}

// `createdAt` is formatted once here rather than through the encoder's custom date strategy,
// which builds a nested encoder per date (measured: the largest share of a 50-message history's
// encoding time).
struct ChannelChatResponse: ResponseEncodable, Sendable {
    var channel_id: ChannelID
    var channelName: String
    var chat_id: MessageID
    var content: String?
    var createdAt: String
    var files: [String]
    var user: MemberSummary
    var extras: MessageExtras

    init(_ message: StoredMessage, in channel: ChannelRef) {
        channel_id = channel.id
        channelName = channel.name
        chat_id = message.id
        content = message.content
        createdAt = Timestamp.format(message.createdAt)
        files = message.files
        user = MemberSummary(message.sender)
        extras = MessageExtras(message)
    }

    private enum CodingKeys: CodingKey { case channel_id, channelName, chat_id, content, createdAt, files, user }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(channel_id, forKey: .channel_id)
        try container.encode(channelName, forKey: .channelName)
        try container.encode(chat_id, forKey: .chat_id)
        try container.encodeIfPresent(content, forKey: .content)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(files, forKey: .files)
        try container.encode(user, forKey: .user)
        try extras.encode(to: encoder)
    }
}

struct ChannelUnreadResponse: ResponseEncodable, Sendable {
    var channel_id: ChannelID
    var name: String
    var count: Int
}

/// `DMRoom`: `user` is the other participant.
struct DMRoomResponse: ResponseEncodable, Sendable {
    var room_id: RoomID
    var createdAt: String
    var user: MemberSummary
}

struct DMChatResponse: ResponseEncodable, Sendable {
    var dm_id: MessageID
    var room_id: RoomID
    var content: String?
    var createdAt: String
    var files: [String]
    var user: MemberSummary
    var extras: MessageExtras

    init(_ message: StoredMessage, in room: RoomRef) {
        dm_id = message.id
        room_id = room.id
        content = message.content
        createdAt = Timestamp.format(message.createdAt)
        files = message.files
        user = MemberSummary(message.sender)
        extras = MessageExtras(message)
    }

    private enum CodingKeys: CodingKey { case dm_id, room_id, content, createdAt, files, user }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(dm_id, forKey: .dm_id)
        try container.encode(room_id, forKey: .room_id)
        try container.encodeIfPresent(content, forKey: .content)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(files, forKey: .files)
        try container.encode(user, forKey: .user)
        try extras.encode(to: encoder)
    }
}

struct DMUnreadResponse: ResponseEncodable, Sendable {
    var room_id: RoomID
    var count: Int
}

struct OpponentBody: Decodable { var opponent_id: String? }

/// The additive fields of a message (beyond the contract's shapes), each present only when it
/// says something, so a plain message has exactly the contract's keys: `parent_id` (a reply),
/// `mentions` (user ids), `reactions` (`[{emoji, count, users}]`), `editedAt`.
struct MessageExtras: Encodable, Sendable {
    var parent_id: MessageID?
    var mentions: [UserID]?
    var reactions: [ChatEvents.Reaction]?
    var editedAt: String?

    init(_ message: StoredMessage) {
        parent_id = message.parentId
        mentions = message.mentionsOrNil
        reactions = message.reactions.isEmpty ? nil : message.reactions
        editedAt = message.editedAt.map(Timestamp.format)
    }
}

extension StoredMessage {
    /// Events and responses omit an empty mention list.
    var mentionsOrNil: [UserID]? { mentions.isEmpty ? nil : mentions }
}
