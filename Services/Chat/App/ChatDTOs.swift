import ClientContract
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

// Message answers are written with `JSONWriter` (measured: `JSONEncoder` was the largest cost of a
// 50-message history), with `createdAt` formatted once per message.
struct ChannelChatResponse: JSONWritable {
    var channel_id: ChannelID
    var channelName: String
    var chat_id: MessageID
    var fields: MessageFields

    init(_ message: StoredMessage, in channel: ChannelRef) {
        channel_id = channel.id
        channelName = channel.name
        chat_id = message.id
        fields = MessageFields(message)
    }

    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.member("channel_id", channel_id)
        json.member("channelName", channelName)
        json.member("chat_id", chat_id)
        fields.write(to: &json)
        json.endObject()
    }
}

/// What `ChannelChat` and `DMChat` share after their ids: `content?`, `createdAt`, `files`
/// (always an array), `user`, then the additive keys.
struct MessageFields: Sendable {
    var content: String?
    var createdAt: String
    var files: [String]
    var user: MemberSummary
    var extras: MessageExtras

    init(_ message: StoredMessage) {
        content = message.content
        createdAt = Timestamp.format(message.createdAt)
        files = message.files
        user = MemberSummary(message.sender)
        extras = MessageExtras(message)
    }

    func write(to json: inout JSONWriter) {
        json.member("content", content)
        json.member("createdAt", createdAt)
        json.member("files", strings: files)
        json.key("user")
        user.write(to: &json)
        extras.write(to: &json)
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

struct DMChatResponse: JSONWritable {
    var dm_id: MessageID
    var room_id: RoomID
    var fields: MessageFields

    init(_ message: StoredMessage, in room: RoomRef) {
        dm_id = message.id
        room_id = room.id
        fields = MessageFields(message)
    }

    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.member("dm_id", dm_id)
        json.member("room_id", room_id)
        fields.write(to: &json)
        json.endObject()
    }
}

struct DMUnreadResponse: ResponseEncodable, Sendable {
    var room_id: RoomID
    var count: Int
}

struct OpponentBody: Decodable { var opponent_id: String? }

/// The additive fields of a message (beyond the contract's shapes), each present only when it
/// says something, so a plain message has exactly the contract's keys: `parent_id` (a reply),
/// `mentions` (user ids), `reactions` (`[{emoji, count, users}]`), `editedAt`. Written into the
/// message's object.
struct MessageExtras: Sendable {
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

    func write(to json: inout JSONWriter) {
        json.member("parent_id", parent_id)
        if let mentions { json.member("mentions", ids: mentions) }
        if let reactions {
            json.key("reactions")
            json.beginArray()
            for reaction in reactions { reaction.write(to: &json) }
            json.endArray()
        }
        json.member("editedAt", editedAt)
    }
}

extension StoredMessage {
    /// Events and responses omit an empty mention list.
    var mentionsOrNil: [UserID]? { mentions.isEmpty ? nil : mentions }
}
