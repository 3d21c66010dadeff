import Foundation

// The readings of the events decoded once per message on the real-time path (`EventJSONReadable`):
// each reads exactly the members its type's Codable conformance decodes, under the same names,
// with optionals missing or null as nil. A member added to one of these types must be added here;
// `EventJSONReadingTests` fails for a sample whose member a reading drops.

extension CloudEvent: EventJSONReadable where Payload: EventJSONReadable {
    /// As `init(from:)`: version 1.0, a UUID id, this payload's type.
    init(reading node: EventJSONNode) throws {
        specversion = try node.member("specversion").string()
        guard specversion == "1.0" else { throw EventJSONNode.Unread() }
        id = try node.member("id").uuid()
        source = try node.member("source").string()
        type = try node.member("type").string()
        guard type == Payload.eventType else { throw EventJSONNode.Unread() }
        time = try node.member("time").date()
        subject = try node.member("subject").string()
        datacontenttype = try node.presentMember("datacontenttype")?.string() ?? "application/json"
        dataschema = try node.presentMember("dataschema")?.string() ?? Payload.dataschema
        data = try node.member("data").read()
    }
}

extension CloudEventHeader: EventJSONReadable {
    init(reading node: EventJSONNode) throws {
        specversion = try node.member("specversion").string()
        id = try node.member("id").uuid()
        source = try node.member("source").string()
        type = try node.member("type").string()
        time = try node.member("time").date()
        subject = try node.presentMember("subject")?.string()
    }
}

extension ChatEvents.Sender: EventJSONReadable {
    init(reading node: EventJSONNode) throws {
        userId = try node.member("userId").identifier()
        email = try node.member("email").string()
        nickname = try node.member("nickname").string()
        profileImage = try node.presentMember("profileImage")?.string()
        alias = try node.presentMember("alias")?.integer()
    }
}

extension ChatEvents.ChannelMessageCreated: EventJSONReadable {
    init(reading node: EventJSONNode) throws {
        messageId = try node.member("messageId").identifier()
        workspaceId = try node.member("workspaceId").identifier()
        channelId = try node.member("channelId").identifier()
        channelName = try node.member("channelName").string()
        sender = try node.member("sender").read()
        content = try node.presentMember("content")?.string()
        files = try node.member("files").array { try $0.string() }
        createdAt = try node.member("createdAt").date()
        parentId = try node.presentMember("parentId")?.identifier()
        mentions = try node.presentMember("mentions")?.array { try $0.identifier() }
        channelAlias = try node.presentMember("channelAlias")?.integer()
        parentName = try node.presentMember("parentName")?.string()
        parentContent = try node.presentMember("parentContent")?.string()
    }
}

extension ChatEvents.DirectMessageCreated: EventJSONReadable {
    init(reading node: EventJSONNode) throws {
        messageId = try node.member("messageId").identifier()
        workspaceId = try node.presentMember("workspaceId")?.identifier()
        roomId = try node.member("roomId").identifier()
        roomAlias = try node.presentMember("roomAlias")?.integer()
        roomName = try node.presentMember("roomName")?.string()
        participants = try node.member("participants").array { try $0.identifier() }
        sender = try node.member("sender").read()
        content = try node.presentMember("content")?.string()
        files = try node.member("files").array { try $0.string() }
        createdAt = try node.member("createdAt").date()
        parentId = try node.presentMember("parentId")?.identifier()
        mentions = try node.presentMember("mentions")?.array { try $0.identifier() }
        parentName = try node.presentMember("parentName")?.string()
        parentContent = try node.presentMember("parentContent")?.string()
    }
}

extension PresenceEvents.StatusChanged: EventJSONReadable {
    init(reading node: EventJSONNode) throws {
        userId = try node.member("userId").identifier()
        guard let status = PresenceEvents.Status(rawValue: try node.member("status").string()) else { throw EventJSONNode.Unread() }
        self.status = status
        lastSeen = try node.member("lastSeen").date()
        workspaceIds = try node.member("workspaceIds").array { try $0.identifier() }
    }
}
