import ClientContract
import Events
import Foundation
import NIOCore

/// The bodies of the MESSAGE frames Smooth's client reads (client contract §2.2): JSON objects
/// whose values are all strings. Users and conversations are named by their integer aliases
/// (Smooth's ids) where the event carries one, else by the suite's ids; message ids are the
/// suite's (Smooth's were strings too). Events Smooth has no frame for (reactions, read cursors)
/// are not sent: its client decodes an unknown `type` as a plain message.
enum StompMessages {
    /// The body for a conversation topic (`/topic/group/{id}`, `/topic/direct/{id}`), nil when
    /// the event has no frame there; `fileBase` is where attachments are linked
    /// (`StompFileLinks`).
    static func conversationBody(of event: LiveEvent, fileBase: String) -> ByteBuffer? {
        var json = JSONWriter(capacity: 384)
        json.beginObject()
        switch event {
        case .channelMessage(let message):
            let channelId = message.channelAlias.map { String($0) } ?? message.channelId.description
            if let file = FileMessage(message.files, content: message.content, parent: message.parentId) {
                file.write(message.messageId, message.sender, channelId: channelId, type: "community", message.createdAt, fileBase, to: &json)
            } else {
                created(message.messageId, message.sender, message.content, message.files, message.parentId, message.createdAt, fileBase, to: &json)
                parent(message.parentName, message.parentContent, of: message.parentId, to: &json)
                json.member("channelId", channelId)
            }
        case .directMessage(let message):
            // The room's integer id (Smooth's), as channels are named by theirs.
            let roomId = message.roomAlias.map { String($0) } ?? message.roomId.description
            if let file = FileMessage(message.files, content: message.content, parent: message.parentId) {
                file.write(message.messageId, message.sender, channelId: roomId, type: "direct", message.createdAt, fileBase, to: &json)
            } else {
                created(message.messageId, message.sender, message.content, message.files, message.parentId, message.createdAt, fileBase, to: &json)
                parent(message.parentName, message.parentContent, of: message.parentId, to: &json)
                json.member("channelId", roomId)
            }
        case .edited(let change):
            json.member("type", "modify")
            json.member("id", change.messageId)
            if let alias = change.senderAlias { json.member("userId", String(alias)) } else { json.member("userId", change.senderId) }
            json.member("message", change.content ?? "")
            json.member("time", Timestamp.formatWithoutZone(change.editedAt))
        case .deleted(let change):
            json.member("type", "delete")
            json.member("id", change.messageId)
        case .typing(let typing):
            json.member("type", "typing")
            json.member("name", typing.name ?? "")
        case .reactions, .readCursor, .presence, .presenceBatch, .signal, .studyChat:
            return nil
        }
        json.endObject()
        return json.buffer
    }

    /// A new message (`type` `message`, `reply` with a parent); a reply of files only names its
    /// first file's URL in `message` with its `fileType` (image, video or file).
    private static func created(
        _ id: MessageID, _ sender: ChatEvents.Sender, _ content: String?, _ files: [String], _ parent: MessageID?, _ createdAt: Date,
        _ fileBase: String, to json: inout JSONWriter
    ) {
        json.member("type", parent == nil ? "message" : "reply")
        json.member("id", id)
        if let alias = sender.alias { json.member("userId", String(alias)) } else { json.member("userId", sender.userId) }
        json.member("name", sender.nickname)
        json.member("profileImage", sender.profileImage ?? "")
        if let file = files.first, (content ?? "").isEmpty {
            json.member("message", StompFileLinks.url(base: fileBase, path: file))
            json.member("fileType", AttachmentKind.of(path: file))
        } else {
            json.member("message", content ?? "")
        }
        json.member("time", Timestamp.formatWithoutZone(createdAt))
        json.member("parentId", parent)
    }

    /// Smooth's file frame (contract §2.2, its server's `FileUploadResponse`), for a new message of
    /// files only that answers nothing: `{id, name, profileImage, message, thumbnail, userId,
    /// channelId, type, fileType, time}`, `message` and `thumbnail` the first two files as
    /// absolute URLs (`thumbnail` empty when there is one file), `type` the conversation's kind
    /// as Smooth's upload named it (`community` / `direct`, which its app reads as a message).
    private struct FileMessage {
        let files: [String]

        init?(_ files: [String], content: String?, parent: MessageID?) {
            guard !files.isEmpty, (content ?? "").isEmpty, parent == nil else { return nil }
            self.files = files
        }

        func write(
            _ id: MessageID, _ sender: ChatEvents.Sender, channelId: String, type: String, _ createdAt: Date, _ fileBase: String,
            to json: inout JSONWriter
        ) {
            json.member("id", id)
            json.member("name", sender.nickname)
            json.member("profileImage", sender.profileImage ?? "")
            json.member("message", StompFileLinks.url(base: fileBase, path: files[0]))
            json.member("thumbnail", files.count > 1 ? StompFileLinks.url(base: fileBase, path: files[1]) : "")
            if let alias = sender.alias { json.member("userId", String(alias)) } else { json.member("userId", sender.userId) }
            json.member("channelId", channelId)
            json.member("type", type)
            json.member("fileType", AttachmentKind.of(path: files[0]))
            json.member("time", Timestamp.formatWithoutZone(createdAt))
        }
    }

    /// A reply's `parentName` and `parentContent` (contract §2.2: the message fields plus these).
    private static func parent(_ name: String?, _ content: String?, of parent: MessageID?, to json: inout JSONWriter) {
        guard parent != nil else { return }
        json.member("parentName", name ?? "")
        json.member("parentContent", content ?? "")
    }

    /// `/topic/{roomId}`: a member of the room's workspace came online or went offline.
    static func presenceBody(of change: PresenceEvents.StatusChanged) -> ByteBuffer {
        var json = JSONWriter(capacity: 96)
        json.beginObject()
        json.member("type", change.status == .online ? "connect" : "disconnect")
        json.member("userId", change.userId)
        json.endObject()
        return json.buffer
    }

    /// `/topic/community/{id}`: a member's community signal (`before-enter`).
    static func signalBody(of signal: GatewayEvents.CommunitySignal) -> ByteBuffer {
        var json = JSONWriter(capacity: 128)
        json.beginObject()
        json.member("type", signal.signal)
        json.member("userId", signal.userId)
        json.member("communityId", signal.communityId.lowercased)
        json.endObject()
        return json.buffer
    }

    /// A subscription that ended because its user may no longer read the room (iOS ignores `out`).
    static func revokedBody(of target: UUID) -> ByteBuffer {
        var json = JSONWriter(capacity: 96)
        json.beginObject()
        json.member("type", "out")
        json.member("channelId", target.lowercased)
        json.endObject()
        return json.buffer
    }
}
