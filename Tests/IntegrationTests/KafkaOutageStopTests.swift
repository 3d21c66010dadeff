import Foundation
import Kafka
import Testing
import TestSupport

/// A service told to stop while Kafka is unreachable still stops within Docker's default grace:
/// its consumers give up leaving their groups (bounded close, abandoned past the graceful limit)
/// instead of waiting for a coordinator that never answers.
@Suite("Stopping with the brokers gone")
struct KafkaOutageStopTests {
    @Test("chat-fanout (a group member and a table reader) stops on SIGTERM within 10 s after its only broker vanished")
    func stopWithBrokersGone() async throws {
        let port = freePortRange(count: 1)
        let process = try await startFanout(port: port, cluster: try TestKafka.catalogCluster(brokers: 1))
        // The cluster is gone once startFanout returns (nothing else holds it); give the
        // consumers a moment to notice.
        try await Task.sleep(for: .seconds(2))
        let start = ContinuousClock.now
        process.signal(SIGTERM)
        let status = try await process.waitForExit(timeout: .seconds(60))
        let took = ContinuousClock.now - start
        #expect(status == 0, "\(process.output.suffix(2000))")
        #expect(took < .seconds(10), "stopped after \(took):\n\(process.output.suffix(2000))")
    }

    /// Starts chat-fanout on `cluster` and waits until it is ready (its consumers caught up).
    private func startFanout(port: Int, cluster: EmbeddedKafkaCluster) async throws -> TestProcess {
        let process = try TestProcess(
            executable: "chat-fanout",
            environment: [
                "KAFKA_BROKERS": cluster.bootstrapServers, "HTTP_PORT": String(port), "LOG_LEVEL": "warning", "KAFKA_FETCH_WAIT_MS": "5",
            ])
        let ready = try await DevRestartTests.becomesReady(port: port, timeout: .seconds(60))
        try #require(ready, "chat-fanout ready:\n\(process.output.suffix(2000))")
        withExtendedLifetime(cluster) {}
        return process
    }
}
