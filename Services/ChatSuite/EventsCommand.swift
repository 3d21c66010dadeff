import ArgumentParser
import Events
import Foundation
import Kafka
import Logging

struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events", abstract: "Inspect the suite's CloudEvents on Kafka.", subcommands: [Tail.self, Topics.self, Export.self]
    )

    /// `chatsuite events tail <topic>`: one JSON event per line (for scripts), or `--pretty`.
    struct Tail: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a topic's events as they arrive.")

        @Argument(help: "Topic name, e.g. auth.user.v1 (see `chatsuite events topics`).")
        var topic: String

        @Option(help: "\(BootstrapServers.help) (default: KAFKA_BROKERS from the environment).", transform: BootstrapServers.parse)
        var brokers: String = ProcessInfo.processInfo.environment["KAFKA_BROKERS"] ?? "127.0.0.1:9092"

        @Flag(help: "Start at the oldest retained event instead of new ones.")
        var fromBeginning = false

        @Flag(help: "Human-readable output with partition, offset and key.")
        var pretty = false

        @Option(help: "Stop after this many events.")
        var max: Int?

        @Option(help: "Stop after this many seconds.")
        var seconds: Int?

        func run() async throws {
            var logger = Logger(label: "chatsuite.events")
            logger.logLevel = .error
            let client = KafkaClientConfiguration(bootstrapServers: brokers, clientId: "chatsuite-events-tail")
            let counts = try await KafkaAdmin.partitionCounts(client: client, logger: logger)
            guard let partitions = counts[topic] else {
                throw ValidationError("unknown topic \(topic); known: \(counts.keys.sorted().joined(separator: ", "))")
            }
            let assignment = (0..<partitions).map {
                TopicPartitionOffset(topic: topic, partition: Int32($0), offset: fromBeginning ? .beginning : .end)
            }
            let consumer = try KafkaConsumer(configuration: KafkaConsumerConfiguration(client: client, mode: .assignment(assignment)), logger: logger)
            let limit = max
            let printPretty = pretty
            let body: @Sendable () async throws -> Void = {
                var count = 0
                for try await message in consumer.messages {
                    let value = message.value.map { String(decoding: $0, as: UTF8.self) } ?? "null"
                    if printPretty {
                        emit("── \(message.topic)[\(message.partition)]@\(message.offset) key=\(message.keyString ?? "-")")
                        if let data = message.value, let object = try? JSONSerialization.jsonObject(with: Data(data)),
                            let text = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
                        {
                            emit(String(decoding: text, as: UTF8.self))
                        } else {
                            emit(value)
                        }
                    } else {
                        emit(value)
                    }
                    count += 1
                    if let limit, count >= limit { break }
                }
            }
            if let seconds {
                try? await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await body() }
                    group.addTask { try await Task.sleep(for: .seconds(seconds)) }
                    try await group.next()
                    group.cancelAll()
                }
            } else {
                try await body()
            }
            await consumer.close()
        }
    }

    struct Topics: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the catalog's topics: partitions, cleanup policy, key.")

        func run() async throws {
            for t in Topic.catalog {
                print(
                    "\(t.name.padding(toLength: 22, withPad: " ", startingAt: 0)) partitions=\(t.partitions) cleanup=\(t.cleanupPolicy.rawValue) key=\(t.key)")
            }
        }
    }
}
