import Synchronization

/// The consumers of one process (or one in-process service) and whether they all caught up:
/// what `/health/ready` waits for. Set it as `KafkaClientConfiguration.readiness`; every
/// `KafkaConsumer` created from such a configuration registers itself.
///
/// A consumer created later than the service's start (one that first waits for something else)
/// is announced with `expect(_:)`, and any other start-up step that may still create consumers
/// holds the registry with `hold(_:)`, so readiness never passes while a consumer is missing.
public final class KafkaReadiness: Sendable {
    private struct State {
        var consumers: [(name: String, catchUp: KafkaCatchUp)] = []
        /// Consumers announced but not created yet, by client id.
        var expected: [String: Int] = [:]
        /// Start-up steps that may still create consumers.
        var holds: [Int: String] = [:]
        var nextHold = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// A start-up step readiness waits for until `release()`.
    public struct Hold: Sendable {
        let readiness: KafkaReadiness
        let id: Int

        public func release() {
            readiness.state.withLock { _ = $0.holds.removeValue(forKey: id) }
        }
    }

    public func hold(_ reason: String) -> Hold {
        state.withLock { s in
            let id = s.nextHold
            s.nextHold += 1
            s.holds[id] = reason
            return Hold(readiness: self, id: id)
        }
    }

    /// Announces a consumer that will be created with `configuration` later on.
    public func expect(_ configuration: KafkaConsumerConfiguration) {
        state.withLock { $0.expected[configuration.client.clientId, default: 0] += 1 }
    }

    func register(_ configuration: KafkaConsumerConfiguration, _ catchUp: KafkaCatchUp) {
        let name = configuration.client.clientId
        state.withLock { s in
            s.consumers.append((name, catchUp))
            if let count = s.expected[name] {
                s.expected[name] = count > 1 ? count - 1 : nil
            }
        }
    }

    /// What readiness still waits for (empty: every consumer caught up), e.g.
    /// `["auth-1-auth.coins: waiting for assignment"]`.
    public var pending: [String] {
        state.withLock { s in
            s.holds.values.sorted().map { "\($0): starting" }
                + s.expected.keys.sorted().map { "\($0): not started" }
                + s.consumers.filter { !$0.catchUp.isCaughtUp }.map { "\($0.name): \($0.catchUp.summary)" }
        }
    }
}

extension KafkaConsumerConfiguration {
    /// Announces to the client's readiness registry (if any) that a consumer with this
    /// configuration will be created later — by a service that builds its consumer when it runs,
    /// or only after something else (chat-fanout's group waits for its interest table) — so
    /// readiness waits for it. Call it when the service is built.
    public func announceForReadiness() {
        client.readiness?.expect(self)
    }
}
