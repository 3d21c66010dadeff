import ChatFanoutApp
import Foundation
import HTTPTypes
import HummingbirdTesting
import Kafka
import ServiceKit
import TestSupport

extension Stack {
    /// Starts a real `chat-fanout` replica on the stack's Kafka cluster (its own consumer-group
    /// member, `name` its instance id) and waits until it is ready; stop it with `stop()`.
    /// - Parameter overrides: environment overrides, as the stack's services get them.
    public func startFanoutReplica(_ name: String, environment overrides: [String: String] = [:]) async throws -> RunningService {
        let environment = [
            "HTTP_PORT": "0", "KAFKA_BROKERS": cluster.bootstrapServers, "LOG_LEVEL": "warning", "KAFKA_FETCH_WAIT_MS": "5",
            "KAFKA_COMPRESSION": "none", "INSTANCE_ID": name,
        ].merging(overrides) { $1 }
        let settings = ServiceSettings(
            serviceName: ChatFanoutService.name, defaults: ChatFanoutService.defaults, environment: environment, arguments: [ChatFanoutService.name]
        )
        let replica = try await RunningService.start { try await ChatFanoutApp.buildApplication(settings: settings, logger: TestDatabase.logger) }
        try await eventually("\(name) ready", timeout: .seconds(30)) {
            try await replica.client.execute(uri: "/health/ready", method: .get).status == .ok
        }
        return replica
    }

    /// Posts `{"content":"probe N"}` to `path` as `user`, pausing `pause` after each, until
    /// `delivered` says the probes arrive: the fan-out learns a gateway's interest through Kafka,
    /// and a message posted before it applied it is not fanned out to that gateway (documented).
    public func probeUntilDelivered(
        _ what: String, to path: String, as user: User, pause: Duration = .milliseconds(300), timeout: Duration = .seconds(60),
        _ delivered: () async throws -> Bool
    ) async throws {
        var probes = 0
        try await eventually(what, timeout: timeout) {
            probes += 1
            _ = try await send(.post, path, user, json: #"{"content":"probe \#(probes)"}"#)
            try await Task.sleep(for: pause)
            return try await delivered()
        }
    }
}
