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

/// Which local sessions listen to which conversation, the gateway's interest in each, and the
/// recently emitted message ids (so a redelivered message is emitted at most once).
///
/// Interest changes are handed to the announcer under the lock, so "interested" and "not
/// interested" for one conversation reach Kafka in the order they happened.
final class SocketIORegistry: Sendable {
    private struct State {
        var subscribers: [ConversationNamespace: [String: EngineSession]] = [:]
        var recent: RecentIds
    }

    private let state: Mutex<State>
    private let announce: @Sendable (UUID, Bool) -> Void

    /// - Parameters:
    ///   - dedupeWindow: how many recent message ids are remembered.
    ///   - announce: called (under the lock) with a conversation and whether this gateway now
    ///     has local subscribers for it.
    init(dedupeWindow: Int, announce: @escaping @Sendable (UUID, Bool) -> Void) {
        state = Mutex(State(recent: RecentIds(capacity: dedupeWindow)))
        self.announce = announce
    }

    func subscribe(_ namespace: ConversationNamespace, _ session: EngineSession) {
        state.withLock { state in
            let wasEmpty = state.subscribers[namespace]?.isEmpty ?? true
            state.subscribers[namespace, default: [:]][session.id] = session
            if wasEmpty { announce(namespace.conversationId, true) }
        }
    }

    func unsubscribe(_ namespace: ConversationNamespace, _ session: EngineSession) {
        state.withLock { state in
            guard state.subscribers[namespace]?.removeValue(forKey: session.id) != nil else { return }
            if state.subscribers[namespace]?.isEmpty ?? true {
                state.subscribers[namespace] = nil
                announce(namespace.conversationId, false)
            }
        }
    }

    /// The sessions to emit a message to, or nil when this message id was emitted already.
    func recipients(of messageId: UUID, in namespace: ConversationNamespace) -> [EngineSession]? {
        state.withLock { state in
            guard state.recent.insert(messageId) else { return nil }
            return state.subscribers[namespace].map { Array($0.values) } ?? []
        }
    }

    func subscriberCount(_ namespace: ConversationNamespace) -> Int {
        state.withLock { $0.subscribers[namespace]?.count ?? 0 }
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
