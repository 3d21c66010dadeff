import Events
import Foundation
import Metrics
import Synchronization

/// Which gateways have at least one local subscriber for which conversation: the latest
/// `interested` per `gateway.interest.v1` key (`<gateway id>/<conversation id>`), applied in
/// partition order (a key always lands in the same partition, so that is per-key order).
final class InterestTable: Sendable {
    private struct State {
        var gatewaysByConversation: [UUID: Set<String>] = [:]
        var entries = 0
    }

    private let state = Mutex(State())
    private let entriesGauge = Gauge(label: "fanout_interest_entries")

    init() {}

    /// Records the latest state of one key; answers whether it changed anything.
    @discardableResult
    func apply(gatewayId: String, conversationId: UUID, interested: Bool) -> Bool {
        let (changed, entries) = state.withLock { s -> (Bool, Int) in
            var gateways = s.gatewaysByConversation[conversationId] ?? []
            let changed = interested ? gateways.insert(gatewayId).inserted : gateways.remove(gatewayId) != nil
            guard changed else { return (false, s.entries) }
            s.entries += interested ? 1 : -1
            s.gatewaysByConversation[conversationId] = gateways.isEmpty ? nil : gateways
            return (true, s.entries)
        }
        if changed { entriesGauge.record(entries) }
        return changed
    }

    /// The gateways interested in any of each record's ids (a conversation, or the workspaces
    /// of a presence change), looked up under one lock (a poll's batch).
    func gateways(for ids: [[UUID]?]) -> [Set<String>] {
        state.withLock { s in
            ids.map { ids in (ids ?? []).reduce(into: Set<String>()) { all, id in all.formUnion(s.gatewaysByConversation[id] ?? []) } }
        }
    }

    /// (gateway, conversation) pairs currently interested.
    var entryCount: Int { state.withLock { $0.entries } }
}

/// The Kafka key of `gateway.interest.v1`, `<gateway id>/<conversation id>` (the subject of
/// `GatewayEvents.InterestChanged`); parsed only for tombstones, which carry no value.
struct InterestKey: Equatable {
    var gatewayId: String
    var conversationId: UUID

    init?(_ key: String) {
        // The conversation id is a UUID (no slash); the gateway id is everything before it.
        guard let slash = key.lastIndex(of: "/"), let id = UUID(parsing: String(key[key.index(after: slash)...])) else { return nil }
        let gateway = String(key[..<slash])
        guard !gateway.isEmpty else { return nil }
        gatewayId = gateway
        conversationId = id
    }
}
