import ServiceKit

/// Per-address limits on what a real-time client may make the gateway do before it has proved
/// anything: every handshake (a Socket.IO session, a native WebSocket) and every namespace join
/// costs memory and a record on Kafka (`gateway.session.v1`, `gateway.interest.v1`), and both
/// are open to anonymous clients. Joins are also capped per session. The REST edge's limits do
/// not see these requests.
struct RealtimeAdmission: Sendable {
    let handshakes: RateLimiter
    let joins: RateLimiter
    /// Conversation namespaces one Socket.IO session may have joined at once.
    let maxNamespacesPerSession: Int

    init(handshakesPerSecond: Double, handshakeBurst: Double, joinsPerSecond: Double, joinBurst: Double, maxNamespacesPerSession: Int) {
        handshakes = RateLimiter(rate: handshakesPerSecond, burst: handshakeBurst)
        joins = RateLimiter(rate: joinsPerSecond, burst: joinBurst)
        self.maxNamespacesPerSession = maxNamespacesPerSession
    }

    init(_ settings: ServiceSettings) throws {
        let values = try [
            "gateway.realtime.handshake-rate-per-second", "gateway.realtime.handshake-burst",
            "gateway.realtime.join-rate-per-second", "gateway.realtime.join-burst", "gateway.socketio.max-namespaces",
        ].map { try settings.int($0) }
        guard values.allSatisfy({ $0 > 0 }) else {
            throw StartupError("gateway.realtime.* and gateway.socketio.max-namespaces must be positive")
        }
        self.init(
            handshakesPerSecond: Double(values[0]), handshakeBurst: Double(values[1]), joinsPerSecond: Double(values[2]), joinBurst: Double(values[3]),
            maxNamespacesPerSession: values[4]
        )
    }

    /// Takes a handshake token for the address.
    func allowHandshake(from address: String) -> Bool { handshakes.allow(address) }

    /// Takes a join token for the address.
    func allowJoin(from address: String) -> Bool { joins.allow(address) }
}
