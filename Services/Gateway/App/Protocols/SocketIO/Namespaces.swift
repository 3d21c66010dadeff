import Events
import Foundation

import Database

/// A conversation namespace of the client contract (§1.8): `/ws-channel-{channel_id}` (event
/// `channel`) or `/ws-dm-{room_id}` (event `dm`); Gen A's `/ws-channel-{integer id}` (Lilac,
/// docs/generation-a.md), which names the channel by its alias. Anything else is not a
/// conversation.
enum ConversationNamespace: Sendable, Hashable {
    case channel(UUID)
    case dm(UUID)
    case generationAChannel(alias: Int64, id: UUID)

    /// The alias of a Gen A namespace as clients write it (`/ws-channel-42`, no leading zeros).
    static func generationAAlias(_ namespace: String) -> Int64? {
        guard namespace.hasPrefix("/ws-channel-"), let alias = IntegerAlias.parse(namespace.dropFirst("/ws-channel-".count)),
            namespace == "/ws-channel-\(alias)"
        else { return nil }
        return alias
    }

    init?(_ namespace: String) {
        if namespace.hasPrefix("/ws-channel-"), let id = UUID(parsing: String(namespace.dropFirst("/ws-channel-".count))) {
            self = .channel(id)
        } else if namespace.hasPrefix("/ws-dm-"), let id = UUID(parsing: String(namespace.dropFirst("/ws-dm-".count))) {
            self = .dm(id)
        } else {
            return nil
        }
    }

    var conversationId: UUID {
        switch self {
        case .channel(let id), .dm(let id), .generationAChannel(_, let id): id
        }
    }

    /// The namespace as clients name it (lowercase id, as the REST answers print it).
    var name: String {
        switch self {
        case .channel(let id): "/ws-channel-\(id.lowercased)"
        case .dm(let id): "/ws-dm-\(id.lowercased)"
        case .generationAChannel(let alias, _): "/ws-channel-\(alias)"
        }
    }

    /// The namespace of a followed conversation (nil for a workspace follow).
    init?(_ follow: LiveFollow) {
        switch follow.kind {
        case .channel: self = follow.generationAAlias.map { .generationAChannel(alias: $0, id: follow.id) } ?? .channel(follow.id)
        case .dm: self = .dm(follow.id)
        case .workspace, .studyUser: return nil
        }
    }

    var followKind: LiveFollow.Kind {
        switch self {
        case .channel, .generationAChannel: .channel
        case .dm: .dm
        }
    }

    var eventName: String {
        switch self {
        case .channel, .generationAChannel: "channel"
        case .dm: "dm"
        }
    }

    var generationAAlias: Int64? {
        if case .generationAChannel(let alias, _) = self { return alias }
        return nil
    }
}
