import Events
import Foundation
import Synchronization

/// The gateway's interest in each conversation across its protocols: Socket.IO namespaces and
/// native sessions each hold a conversation while they have local subscribers for it, and the
/// gateway announces `interested: true` on `gateway.interest.v1` when the first holder arrives
/// and `false` when the last one leaves. Announcements are queued under the lock, so the two
/// states of one conversation reach Kafka in the order they happened.
///
/// An announcement of interest is in flight until the broker acknowledged it; `announced(_:within:)`
/// waits for that, so a subscription can be confirmed to its client only once chat-fanout can
/// learn of it (what is sent before fan-out reads the interest reaches no socket of this gateway).
final class GatewayInterest: Sendable {
    private let holders = Mutex<[UUID: Int]>([:])
    /// Announcements of interest sent but not yet acknowledged, per conversation. Its own lock,
    /// taken inside `holders`' or alone: an acknowledgement may arrive while `holders` is held.
    private let inFlight = Mutex<[UUID: Int]>([:])
    private let announce: @Sendable (UUID, Bool, _ delivered: @escaping @Sendable () -> Void) -> Void

    init(gatewayId: String, events: GatewayEventPublisher) {
        announce = { conversation, interested, delivered in
            let change = GatewayEvents.InterestChanged(gatewayId: gatewayId, conversationId: conversation, interested: interested)
            // A withdrawal is the key's last word: a tombstone follows it (compaction drops both).
            if interested { events.publish(change, delivered: delivered) } else { events.publishFinal(change) }
        }
    }

    /// For tests: announcements go to `announce`, acknowledged at once.
    convenience init(announce: @escaping @Sendable (UUID, Bool) -> Void) {
        self.init { conversation, interested, delivered in
            announce(conversation, interested)
            delivered()
        }
    }

    /// For tests: announcements go to `announce`, acknowledged when it calls `delivered`.
    init(announce: @escaping @Sendable (UUID, Bool, _ delivered: @escaping @Sendable () -> Void) -> Void) {
        self.announce = announce
    }

    func hold(_ conversation: UUID) {
        holders.withLock { holders in
            holders[conversation, default: 0] += 1
            guard holders[conversation] == 1 else { return }
            inFlight.withLock { $0[conversation, default: 0] += 1 }
            announce(conversation, true) { [weak self] in self?.acknowledged(conversation) }
        }
    }

    private func acknowledged(_ conversation: UUID) {
        inFlight.withLock { inFlight in
            guard let count = inFlight[conversation] else { return }
            inFlight[conversation] = count > 1 ? count - 1 : nil
        }
    }

    /// Whether an announcement of interest in `conversation` awaits the broker's acknowledgement.
    func isAnnouncing(_ conversation: UUID) -> Bool {
        inFlight.withLock { $0[conversation] != nil }
    }

    /// Returns once no announcement of interest in `conversation` is in flight, or after `limit`
    /// (a broker that does not answer delays a confirmation, it does not refuse it).
    func announced(_ conversation: UUID, within limit: Duration) async {
        // Checked after 1, 2, 4 … ms, then every 50 ms: an acknowledgement usually takes about a
        // millisecond, and a broker that is down costs each waiter ~45 wake-ups, not 2 000.
        let deadline = ContinuousClock.now + limit
        var pause = Duration.milliseconds(1)
        while isAnnouncing(conversation), ContinuousClock.now < deadline {
            try? await Task.sleep(for: min(pause, ContinuousClock.now.duration(to: deadline)))
            pause = min(pause * 2, .milliseconds(50))
        }
    }

    func release(_ conversation: UUID) {
        holders.withLock { holders in
            guard let count = holders[conversation] else { return }
            if count <= 1 {
                holders[conversation] = nil
                announce(conversation, false) {}
            } else {
                holders[conversation] = count - 1
            }
        }
    }
}
