import Logging
import ServiceLifecycle

/// An idempotent producer (acks=all) for one thread that may block — a consumer's poll thread
/// (`KafkaConsumer.consumeOnPollThread`) that produces what it read and waits for the
/// acknowledgements before storing offsets, as chat-fanout does.
///
/// `KafkaProducer` serves delivery reports on a thread of its own, which then wakes the waiting
/// caller: two thread wake-ups per batch. Here the caller serves them itself, in `sendAll`, so
/// the broker's acknowledgement wakes it directly (docs/benchmarks.md, part 16). Meant for one
/// caller at a time: a second concurrent caller may serve the first one's reports, and the first
/// then notices them only at the end of its current wait (at most 100 ms).
public final class KafkaBlockingProducer: Service, Sendable {
    private let producer: KafkaProducer

    public init(configuration: KafkaProducerConfiguration, logger: Logger) throws {
        producer = try KafkaProducer(configuration: configuration, logger: logger, pollThread: false)
    }

    public var configuration: KafkaProducerConfiguration { producer.configuration }

    /// Enqueues `messages` in order (waiting while the client's buffer is full), then blocks until
    /// each has its delivery report, serving them on this thread; one outcome per record, in
    /// order. Order within a partition is kept. Never call it from the cooperative pool.
    public func sendAll(_ messages: [KafkaProducerMessage]) -> [Result<KafkaDeliveryReport, any Error>] {
        producer.sendAllBlocking(messages)
    }

    /// Records enqueued but not yet acknowledged.
    public var outstanding: Int { producer.outstanding }

    /// Keeps the producer until graceful shutdown, then flushes what is buffered (as `KafkaProducer`).
    public func run() async throws {
        try await producer.run()
    }
}
