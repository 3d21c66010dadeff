import ChatInternalAPI
import ClientContract
import Events
import Foundation
import NIOCore

/// The protocol-neutral JSON of each live event: the native dispatch's `d` and the argument of
/// the Socket.IO event of the same name (docs/native-gateway.md, docs/realtime.md). Messages are
/// the REST objects (`ChannelChat`, `DMChat`); edits and deletions are `MessageChangePayload`,
/// which chat also writes into a resume's replay.
enum LivePayloads {
    static func json(of event: LiveEvent) -> ByteBuffer {
        switch event {
        case .channelMessage(let message): return message.jsonBuffer
        case .directMessage(let message): return message.jsonBuffer
        case .edited(let change): return MessageChangePayload(edited: change).jsonBuffer
        case .deleted(let change): return MessageChangePayload(deleted: change).jsonBuffer
        default: break
        }
        var json = JSONWriter(capacity: 256)
        json.beginObject()
        switch event {
        case .reactions(let change):
            conversation(change.conversation.id, change.conversation.kind, to: &json)
            json.member("chat_id", change.messageId)
            json.member("user_id", change.userId)
            json.member("emoji", change.emoji)
            json.member("added", change.added)
            json.key("reactions")
            json.beginArray()
            for reaction in change.reactions { reaction.write(to: &json) }
            json.endArray()
        case .typing(let typing):
            conversation(typing.conversationId, typing.kind, to: &json)
            json.member("user_id", typing.userId)
            json.member("name", typing.name)
        case .readCursor(let cursor):
            conversation(cursor.conversation.id, cursor.conversation.kind, to: &json)
            json.member("readAt", Timestamp.format(cursor.readAt))
        case .presence(let change):
            presence(change, to: &json)
        case .presenceBatch(let batch):
            presenceBatch(batch, excluding: nil, to: &json)
        case .signal(let signal):
            json.member("community_id", signal.communityId.lowercased)
            json.member("user_id", signal.userId)
            json.member("signal", signal.signal)
        case .studyChat(let chat):
            // The study app force-casts these five keys to strings (client contract §3.2).
            json.member("_id", chat.id)
            json.member("chat", chat.chat)
            json.member("createdAt", Timestamp.format(chat.createdAt))
            json.member("from", chat.from)
            json.member("to", chat.to)
        case .channelMessage, .directMessage, .edited, .deleted:
            break
        }
        json.endObject()
        return json.buffer
    }

    /// A `presence.batch` payload without `user`'s own change (for that user's sessions).
    static func presenceBatch(_ batch: PresenceBatch, excluding user: UserID) -> ByteBuffer {
        var json = JSONWriter(capacity: 64 + 96 * batch.changes.count)
        json.beginObject()
        presenceBatch(batch, excluding: user, to: &json)
        json.endObject()
        return json.buffer
    }

    /// `"workspace_id":…,"updates":[{"user_id","status","lastSeen"}…]`.
    private static func presenceBatch(_ batch: PresenceBatch, excluding user: UserID?, to json: inout JSONWriter) {
        json.member("workspace_id", batch.workspaceId.lowercased)
        json.key("updates")
        json.beginArray()
        for change in batch.changes where change.userId != user {
            json.beginObject()
            presence(change, to: &json)
            json.endObject()
        }
        json.endArray()
    }

    private static func presence(_ change: PresenceEvents.StatusChanged, to json: inout JSONWriter) {
        json.member("user_id", change.userId)
        json.member("status", change.status.rawValue)
        json.member("lastSeen", Timestamp.format(change.lastSeen))
    }

    private static func conversation(_ id: UUID, _ kind: ChatEvents.Conversation.Kind, to json: inout JSONWriter) {
        json.member("conversation_id", id.lowercased)
        json.member("kind", kind.rawValue)
    }

    /// `{"conversation_id":…}`: a conversation the session no longer follows.
    static func removal(of conversation: UUID) -> ByteBuffer {
        var json = JSONWriter(capacity: 64)
        json.beginObject()
        json.member("conversation_id", conversation.lowercased)
        json.endObject()
        return json.buffer
    }
}
