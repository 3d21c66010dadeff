import Foundation
import Synchronization

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

    var eventName: String {
        switch self {
        case .channel: "channel"
        case .dm: "dm"
        }
    }
}

/// Which local Socket.IO sessions listen to which conversation; the namespace's first
/// subscriber holds the gateway's interest in the conversation, its last releases it (under the
/// lock, so the two reach the interest tracker in order).
final class SocketIORegistry: Sendable {
    private let subscribers = Mutex<[ConversationNamespace: [String: EngineSession]]>([:])
    private let interest: GatewayInterest

    init(interest: GatewayInterest) {
        self.interest = interest
    }

    func subscribe(_ namespace: ConversationNamespace, _ session: EngineSession) {
        subscribers.withLock { subscribers in
            let wasEmpty = subscribers[namespace]?.isEmpty ?? true
            subscribers[namespace, default: [:]][session.id] = session
            if wasEmpty { interest.hold(namespace.conversationId) }
        }
    }

    func unsubscribe(_ namespace: ConversationNamespace, _ session: EngineSession) {
        subscribers.withLock { subscribers in
            guard subscribers[namespace]?.removeValue(forKey: session.id) != nil else { return }
            if subscribers[namespace]?.isEmpty ?? true {
                subscribers[namespace] = nil
                interest.release(namespace.conversationId)
            }
        }
    }

    /// The sessions listening to the namespace.
    func recipients(in namespace: ConversationNamespace) -> [EngineSession] {
        subscribers.withLock { $0[namespace].map { Array($0.values) } ?? [] }
    }
}

/// A fixed-size memory of ids: a ring buffer for eviction order plus a set for lookups.
struct RecentIds {
    private var ring: [UUID?]
    private var next = 0
    private var members: Set<UUID> = []

    init(capacity: Int) {
        ring = Array(repeating: nil, count: max(capacity, 1))
    }

    /// Remembers `id`; false when it was already remembered.
    mutating func insert(_ id: UUID) -> Bool {
        guard members.insert(id).inserted else { return false }
        if let evicted = ring[next] { members.remove(evicted) }
        ring[next] = id
        next = (next + 1) % ring.count
        return true
    }
}
