import Events
import Foundation
import Synchronization

/// The gateway's interest in each conversation across its protocols: Socket.IO namespaces and
/// native sessions each hold a conversation while they have local subscribers for it, and the
/// gateway announces `interested: true` on `gateway.interest.v1` when the first holder arrives
/// and `false` when the last one leaves. Announcements are queued under the lock, so the two
/// states of one conversation reach Kafka in the order they happened.
final class GatewayInterest: Sendable {
    private let holders = Mutex<[UUID: Int]>([:])
    private let announce: @Sendable (UUID, Bool) -> Void

    init(gatewayId: String, events: GatewayEventPublisher) {
        announce = { conversation, interested in
            let change = GatewayEvents.InterestChanged(gatewayId: gatewayId, conversationId: conversation, interested: interested)
            // A withdrawal is the key's last word: a tombstone follows it (compaction drops both).
            if interested { events.publish(change) } else { events.publishFinal(change) }
        }
    }

    /// For tests: announcements go to `announce`.
    init(announce: @escaping @Sendable (UUID, Bool) -> Void) {
        self.announce = announce
    }

    func hold(_ conversation: UUID) {
        holders.withLock { holders in
            holders[conversation, default: 0] += 1
            if holders[conversation] == 1 { announce(conversation, true) }
        }
    }

    func release(_ conversation: UUID) {
        holders.withLock { holders in
            guard let count = holders[conversation] else { return }
            if count <= 1 {
                holders[conversation] = nil
                announce(conversation, false)
            } else {
                holders[conversation] = count - 1
            }
        }
    }
}
