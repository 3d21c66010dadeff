import Database
import Events
import Foundation
import Kafka
import Logging
import Messaging
import PushApp
import ServiceKit
import SuiteTesting
import Synchronization
import Testing
import TestSupport

/// `kafka.inbox-reader` reaches a service's inbox consumers through `ServicePlatform`: push is
/// started on the Swift embedded broker with each value, and the broker's request log says who
/// fetched. The consumers' own fetch (`BlockingPartitionFetcher`) asks with Fetch v4; librdkafka
/// asks with the newest version the broker serves (v5). Both use the consumer's client id,
/// `<instance>-<group>`.
@Suite("kafka.inbox-reader reaches the inbox consumers", .serialized)
struct InboxReaderWiringTests {
    /// The Fetch versions the broker received from clients whose id ends in `-push.messages`.
    final class FetchVersions: Sendable {
        private let seen = Mutex<Set<String>>([])
        var versions: Set<String> { seen.withLock { $0 } }

        func logger() -> Logger {
            var logger = Logger(label: "inbox-reader-wiring") { _ in Handler(versions: self) }
            logger.logLevel = .trace
            return logger
        }

        struct Handler: LogHandler {
            let versions: FetchVersions
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .trace
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }

            func log(event: LogEvent) {
                guard event.message.description == "embedded broker request", let metadata = event.metadata,
                    metadata["api"]?.description == "fetch", metadata["client"]?.description.hasSuffix("-push.messages") == true,
                    let version = metadata["version"]?.description
                else { return }
                _ = versions.seen.withLock { $0.insert(version) }
            }
        }
    }

    @Test("native: the group fetches with the suite's own fetch (v4); librdkafka: only with librdkafka's (v5)", arguments: ["native", "librdkafka"])
    func reader(_ reader: String) async throws {
        let fetches = FetchVersions()
        let cluster = try EmbeddedKafkaCluster(brokers: 1, engine: .swift, logger: fetches.logger())
        try cluster.createTopics(Topic.catalog.map(\.specification))
        let database = try await TestDatabase.create(prefix: "push")
        do {
            let environment = [
                "HTTP_PORT": "0", "KAFKA_BROKERS": cluster.bootstrapServers, "DATABASE_URL": database.configuration.url, "LOG_LEVEL": "warning",
                "KAFKA_FETCH_WAIT_MS": "5", "KAFKA_INBOX_READER": reader,
            ]
            let settings = ServiceSettings(
                serviceName: PushService.name, defaults: PushService.defaults, environment: environment, arguments: [PushService.name])
            let push = try await RunningService.start { try await PushApp.buildApplication(settings: settings, logger: TestKafka.logger) }
            let outcome: Result<Set<String>, any Error>
            do {
                let expected = reader == "native" ? "4" : "5"
                try await eventually("push.messages fetches with Fetch v\(expected)", timeout: .seconds(60)) { fetches.versions.contains(expected) }
                // A few more fetch rounds (5 ms waits), in which the other reader must not show up.
                try await Task.sleep(for: .milliseconds(500))
                outcome = .success(fetches.versions)
            } catch {
                outcome = .failure(error)
            }
            try await push.stop()
            try await database.drop()
            let versions = try outcome.get()
            // With the native reader librdkafka keeps the group with its partitions paused; it may
            // have asked once before the pause, so only its absence from librdkafka's run is checked.
            if reader == "native" {
                #expect(versions.contains("4"), "Fetch versions from push.messages: \(versions.sorted())")
            } else {
                #expect(versions == ["5"], "Fetch versions from push.messages: \(versions.sorted())")
            }
        } catch {
            try? await database.drop()
            throw error
        }
    }
}
