import ArgumentParser
import Events
import Foundation
import Kafka
import Logging
import Messaging
import ServiceKit

/// `chatsuite broker`: only the embedded Kafka cluster, for running executables standalone.
struct BrokerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "broker", abstract: "Run the embedded Kafka cluster with the catalog's topics until Ctrl-C."
    )

    @Option(help: "Brokers in librdkafka's mock cluster (--embedded-engine mock); the Swift broker is one.")
    var embeddedBrokers: Int = 1

    @Option(help: "swift (EmbeddedKafkaBroker, one broker) or mock (librdkafka's mock cluster); default CHATSUITE_EMBEDDED_KAFKA, else swift.")
    var embeddedEngine: EmbeddedKafkaEngine = .fromEnvironment

    func run() async throws {
        var logger = Logger(label: "chatsuite.broker")
        logger.logLevel = .warning
        let cluster = try EmbeddedKafkaCluster(brokers: embeddedBrokers, engine: embeddedEngine, logger: logger)
        try cluster.createTopics(Topic.catalog.map(\.specification))
        emit("KAFKA_BROKERS=\(cluster.bootstrapServers)")
        let stream = AsyncStream<Int32>.makeStream()
        let watcher = SignalWatcher(signals: [SIGINT, SIGTERM]) { stream.continuation.yield($0) }
        for await _ in stream.stream { break }
        watcher.cancel()
        withExtendedLifetime(cluster) {}
    }
}

/// Writes a line to stdout unbuffered (scripts read these lines while the command runs).
func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
