import Foundation

/// A conversation namespace of the client contract (§1.8): `/ws-channel-{channel_id}` (event
/// `channel`) or `/ws-dm-{room_id}` (event `dm`). Anything else is not a conversation.
enum ConversationNamespace: Sendable, Hashable {
    case channel(UUID)
    case dm(UUID)

    init?(_ namespace: String) {
        if namespace.hasPrefix("/ws-channel-"), let id = UUID(uuidString: String(namespace.dropFirst("/ws-channel-".count))) {
            self = .channel(id)
        } else if namespace.hasPrefix("/ws-dm-"), let id = UUID(uuidString: String(namespace.dropFirst("/ws-dm-".count))) {
            self = .dm(id)
        } else {
            return nil
        }
    }

    var conversationId: UUID {
        switch self {
        case .channel(let id), .dm(let id): id
        }
    }

    /// The namespace as clients name it (lowercase id, as the REST answers print it).
    var name: String {
        switch self {
        case .channel(let id): "/ws-channel-\(id.uuidString.lowercased())"
        case .dm(let id): "/ws-dm-\(id.uuidString.lowercased())"
        }
    }

    /// The namespace of a followed conversation (nil for a workspace follow).
    init?(_ follow: LiveFollow) {
        switch follow.kind {
        case .channel: self = .channel(follow.id)
        case .dm: self = .dm(follow.id)
        case .workspace, .studyUser: return nil
        }
    }

    var followKind: LiveFollow.Kind {
        switch self {
        case .channel: .channel
        case .dm: .dm
        }
    }

    var eventName: String {
        switch self {
        case .channel: "channel"
        case .dm: "dm"
        }
    }
}
