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

    init(_ message: StoredMessage, in channel: ChannelRef) {
        channel_id = channel.id
        channelName = channel.name
        chat_id = message.id
        content = message.content
        createdAt = Timestamp.format(message.createdAt)
        files = message.files
        user = MemberSummary(message.sender)
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

    init(_ message: StoredMessage, in room: RoomRef) {
        dm_id = message.id
        room_id = room.id
        content = message.content
        createdAt = Timestamp.format(message.createdAt)
        files = message.files
        user = MemberSummary(message.sender)
    }
}

struct DMUnreadResponse: ResponseEncodable, Sendable {
    var room_id: RoomID
    var count: Int
}

struct OpponentBody: Decodable { var opponent_id: String? }
