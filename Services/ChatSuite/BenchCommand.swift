import ArgumentParser
import Common
import Foundation
import Kafka
import LoadGen
import Logging

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench", abstract: "Benchmarks.",
        subcommands: [
            KafkaBench.self, LoginBench.self, WorkspaceBench.self, ChatBench.self, UploadBench.self, PushBench.self, StudySearchBench.self, DecodeBench.self,
        ])
}

/// `chatsuite bench kafka`: producer throughput and produce→consume latency, on the embedded
/// broker unless `--brokers` is given.
struct KafkaBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "kafka", abstract: "Producer throughput and produce→consume latency.")

    @Option(help: "\(BootstrapServers.help) (default: start an embedded 3-broker cluster).", transform: BootstrapServers.parse)
    var brokers: String?

    @Option(help: "Messages for the throughput run.")
    var messages: Int = 200_000

    @Option(help: "Payload size in bytes.")
    var payload: Int = 100

    @Option(help: "Messages for the latency run.")
    var latencyMessages: Int = 5_000

    @Option(help: "Send rate of the latency run (messages per second).")
    var rate: Int = 1_000

    @Option(help: "Producer linger.ms (the suite's default is 0).")
    var lingerMs: Double = 0

    @Option(help: "Consumer fetch.wait.max.ms (services default to 100; the dev launcher uses 5 on the embedded broker, which always waits this long).")
    var fetchWaitMs: Int = 5

    @Option(help: "Extra librdkafka consumer properties, key=value (repeatable).")
    var consumerProperty: [String] = []

    func run() async throws {
        var logger = Logger(label: "chatsuite.bench")
        logger.logLevel = .error
        var cluster: EmbeddedKafkaCluster?
        let bootstrap: String
        if let brokers {
            bootstrap = brokers
        } else {
            let c = try EmbeddedKafkaCluster(brokers: 3, logger: logger)
            cluster = c
            bootstrap = c.bootstrapServers
        }
        let runId = UUID().uuidString.prefix(8).lowercased()
        let throughputTopic = "bench.throughput.\(runId)"
        let latencyTopic = "bench.latency.\(runId)"
        if let cluster {
            try cluster.createTopic(throughputTopic, partitions: 6)
            try cluster.createTopic(latencyTopic, partitions: 6)
        } else {
            let client = KafkaClientConfiguration(bootstrapServers: bootstrap, clientId: "bench-admin")
            try await KafkaAdmin.ensureTopics(
                [.init(name: throughputTopic, partitions: 6), .init(name: latencyTopic, partitions: 6)], client: client, logger: logger)
        }
        print(
            "broker: \(cluster.map { $0.engine == .mock ? "embedded (librdkafka mock, \($0.brokerCount) brokers)" : "embedded (Swift broker)" } ?? bootstrap)  payload: \(payload) B  linger.ms: \(lingerMs)  fetch.wait.max.ms: \(fetchWaitMs)"
        )

        var producerConfig = KafkaProducerConfiguration(client: KafkaClientConfiguration(bootstrapServers: bootstrap, clientId: "bench-producer"))
        producerConfig.lingerMilliseconds = lingerMs
        let producer = try KafkaProducer(configuration: producerConfig, logger: logger)

        // Throughput: enqueue as fast as possible, then wait for every acknowledgement.
        let body = [UInt8](repeating: 0x61, count: payload)
        let keys = (0..<1_000).map { Array("key-\($0)".utf8) }
        _ = try await producer.sendAndAwait(KafkaProducerMessage(topic: throughputTopic, key: keys[0], value: body))  // warm-up
        let start = ContinuousClock.now
        for i in 0..<messages {
            try await producer.send(KafkaProducerMessage(topic: throughputTopic, key: keys[i % keys.count], value: body))
        }
        try await producer.flush(timeout: .seconds(120))
        let elapsed = seconds(ContinuousClock.now - start)
        print(
            String(
                format: "throughput: %d messages in %.2f s = %.0f messages/s (%.1f MB/s), acks=all, idempotent", messages, elapsed,
                Double(messages) / elapsed, Double(messages * payload) / elapsed / 1_000_000))

        // Latency: a consumer group member reads what a paced producer sends; each payload
        // carries its send time (monotonic clock, same process).
        var consumerConfig = KafkaConsumerConfiguration(
            client: KafkaClientConfiguration(bootstrapServers: bootstrap, clientId: "bench-consumer"),
            mode: .group(id: "bench-\(runId)", topics: [latencyTopic])
        )
        consumerConfig.autoOffsetReset = .latest
        consumerConfig.fetchWaitMaxMilliseconds = fetchWaitMs
        for pair in consumerProperty {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw ValidationError("--consumer-property expects key=value") }
            consumerConfig.properties[parts[0]] = parts[1]
        }
        let consumer = try KafkaConsumer(configuration: consumerConfig, logger: logger)
        let deadline = ContinuousClock.now + .seconds(30)
        let readiness = Task {
            for try await _ in consumer.messages {}
        }
        while consumer.assignment.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        readiness.cancel()
        _ = await readiness.result
        guard !consumer.assignment.isEmpty else { throw ValidationError("the latency consumer got no partitions") }
        try await Task.sleep(for: .milliseconds(500))

        // Warm-up: traffic until every partition has delivered at least once (offset lookups and
        // first fetches are start-up cost, not steady-state latency); the measured run follows.
        let total = latencyMessages
        let warmupMarker: UInt8 = 0x77
        let collector = Task { () -> [Double] in
            var latencies: [Double] = []
            latencies.reserveCapacity(total)
            for try await message in consumer.messages {
                let now = monotonicNanos()
                try consumer.storeOffset(message)
                guard let value = message.value, value.count >= 9, value[8] != warmupMarker else { continue }
                let sent = value.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                latencies.append(Double(now - sent) / 1_000_000)
                if latencies.count >= total { break }
            }
            return latencies
        }
        let interval = Duration.nanoseconds(1_000_000_000 / rate)
        func send(_ i: Int, warmup: Bool) async throws {
            var value = [UInt8](repeating: 0x61, count: max(payload, 9))
            let now = monotonicNanos()
            for b in 0..<8 { value[b] = UInt8(truncatingIfNeeded: now >> (8 * UInt64(7 - b))) }
            if warmup { value[8] = warmupMarker }
            try await producer.send(KafkaProducerMessage(topic: latencyTopic, key: keys[i % keys.count], value: value))
        }
        var next = ContinuousClock.now
        for i in 0..<max(rate, 200) {  // one second of warm-up traffic, every key
            try await send(i, warmup: true)
            next += interval
            try await Task.sleep(until: next)
        }
        try await Task.sleep(for: .seconds(1))
        next = ContinuousClock.now
        for i in 0..<total {
            try await send(i, warmup: false)
            next += interval
            try await Task.sleep(until: next)
        }
        let latencies = try await withTimeout(.seconds(60), "latency run") { try await collector.value }.sorted()
        func pct(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        print(
            String(
                format: "latency (produce→consume, %d messages at %d/s): p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  max %.2f ms",
                latencies.count, rate, pct(0.50), pct(0.90), pct(0.99), latencies.last ?? 0))
        await consumer.close()
        try await producer.flush()
        withExtendedLifetime(cluster) {}
    }
}

private func seconds(_ d: Duration) -> Double {
    Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}
