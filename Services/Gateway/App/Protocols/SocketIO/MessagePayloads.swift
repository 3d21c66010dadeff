import ClientContract
import Events
import Foundation
import NIOCore
import ServiceKit

// The objects Socket.IO clients receive: the same shapes as chat's REST answers to the POST
// (client contract §1.1, §1.8): `ChannelChat` for `channel`, `DMChat` for `dm`. Written from the
// `chat.message.v1` event, which carries every field of them.

extension ChatEvents.ChannelMessageCreated: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.member("channel_id", channelId)
        json.member("channelName", channelName)
        json.member("chat_id", messageId)
        writeCommon(to: &json, content: content, createdAt: createdAt, files: files, sender: sender, parentId: parentId, mentions: mentions)
        json.endObject()
    }
}

extension ChatEvents.DirectMessageCreated: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.member("dm_id", messageId)
        json.member("room_id", roomId)
        writeCommon(to: &json, content: content, createdAt: createdAt, files: files, sender: sender, parentId: parentId, mentions: mentions)
        json.endObject()
    }
}

/// The members both shapes share, in the REST answers' order.
private func writeCommon(
    to json: inout JSONWriter, content: String?, createdAt: Date, files: [String], sender: ChatEvents.Sender, parentId: MessageID?, mentions: [UserID]?
) {
    json.member("content", content)
    json.member("createdAt", Timestamp.format(createdAt))
    json.member("files", strings: files)
    json.key("user")
    MemberSummary(userId: sender.userId, email: sender.email, nickname: sender.nickname, profileImage: sender.profileImage).write(to: &json)
    json.member("parent_id", parentId)
    if let mentions, !mentions.isEmpty { json.member("mentions", ids: mentions) }
}

/// Gen A's `Chatting` (Lilac, docs/generation-a.md) as its `/ws-channel-{alias}` namespace gets
/// it: the channel's and the sender's integer aliases (0 when the event has none) and the
/// message's `generationAChatID`, the same as chat's Gen A answers.
struct GenerationAChatPayload: JSONWritable {
    let message: ChatEvents.ChannelMessageCreated

    init(_ message: ChatEvents.ChannelMessageCreated) { self.message = message }

    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.member("channel_id", Int(message.channelAlias ?? 0))
        json.member("channelName", message.channelName)
        json.member("chat_id", Int(message.messageId.generationAChatID))
        json.member("content", message.content)
        json.member("createdAt", Timestamp.format(message.createdAt))
        json.member("files", strings: message.files)
        json.key("user")
        json.beginObject()
        json.member("user_id", Int(message.sender.alias ?? 0))
        json.member("email", message.sender.email)
        json.member("nickname", message.sender.nickname)
        json.member("profileImage", message.sender.profileImage)
        json.endObject()
        json.endObject()
    }
}
