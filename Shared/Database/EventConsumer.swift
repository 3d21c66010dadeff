import Events
import Foundation
import Kafka
import Logging
import Metrics
import PostgresNIO
import ServiceLifecycle

/// What a handler gets for one event: the open transaction and the event's envelope attributes.
public struct EventContext: Sendable {
    public let connection: PostgresConnection
    public let header: CloudEventHeader
    public let message: KafkaConsumerMessage
    public let logger: Logger

    /// Decodes the typed event from the record. A record that does not decode can never succeed,
    /// so the failure is `UndecodableEvent` (skipped and counted), not a retried error.
    public func decode<P: EventPayload>(_ type: P.Type) throws -> CloudEvent<P> {
        do {
            return try EventCoding.decode(type, from: message.value ?? [])
        } catch {
            throw UndecodableEvent(type: header.type, reason: "\(error)")
        }
    }
}

/// A record whose envelope names a known type but whose `data` does not match it.
public struct UndecodableEvent: Error, CustomStringConvertible {
    public let type: String
    public let reason: String
    public var description: String { "undecodable \(type): \(reason)" }
}

/// Routes events by CloudEvents `type` to typed handlers. Unknown types are skipped (a newer
/// producer may publish types this consumer does not know yet).
public struct EventRouter: Sendable {
    public typealias Handler = @Sendable (EventContext) async throws -> Void
    /// Applies consecutive events of one type, in order, in one call (the contexts share the
    /// connection of the inbox transaction).
    public typealias BatchHandler = @Sendable ([EventContext]) async throws -> Void
    private var handlers: [String: Handler] = [:]
    private var batchHandlers: [String: BatchHandler] = [:]

    public init() {}

    public mutating func on<P: EventPayload>(_ type: P.Type, _ handle: @escaping @Sendable (CloudEvent<P>, EventContext) async throws -> Void) {
        handlers[P.eventType] = { context in
            try await handle(try context.decode(P.self), context)
        }
        batchHandlers[P.eventType] = nil
    }

    /// A handler for runs of `type`: the events of one poll that follow each other in the topic
    /// (and were not applied before) reach `handle` together, so it can apply them in a few
    /// statements instead of a few per event. A record processed alone comes as a run of one.
    public mutating func onBatch<P: EventPayload>(
        _ type: P.Type, _ handle: @escaping @Sendable ([(event: CloudEvent<P>, context: EventContext)]) async throws -> Void
    ) {
        let batch: BatchHandler = { contexts in
            try await handle(contexts.map { (try $0.decode(P.self), $0) })
        }
        batchHandlers[P.eventType] = batch
        handlers[P.eventType] = { context in try await batch([context]) }
    }

    public func handler(for type: String) -> Handler? { handlers[type] }
    public func batchHandler(for type: String) -> BatchHandler? { batchHandlers[type] }
    public var eventTypes: [String] { handlers.keys.sorted() }
}

/// Runs a Kafka consumer whose every event is handled exactly once in effect: a transaction claims
/// each event id in the inbox and applies its handler; offsets are stored only after that
/// transaction committed. The records of one poll share one transaction (up to
/// `eventsPerTransaction`), which saves a `BEGIN` and a `COMMIT` per event under load; if any of
/// them fails, that transaction rolls back and each record is processed alone, as follows. A
/// failing handler is retried with backoff (the partition waits; nothing is skipped). A record
/// that is not a CloudEvent, or whose data does not decode as its declared type, can never
/// succeed: it is logged at error level with its position, counted in `events_skipped_total`, and
/// skipped so it does not block the partition forever.
public final class InboxEventConsumer: Service, Sendable {
    private let name: String
    private let consumer: KafkaConsumer
    private let postgres: PostgresClient
    private let router: EventRouter
    private let logger: Logger
    private let processed: Counter
    private let failures: Counter
    private let skipped: Counter
    /// The consumer's poll thread fetches the records itself (`KafkaConsumer.consumeFetching`).
    private let fetchesItself: Bool

    /// - Parameters:
    ///   - name: the inbox's consumer name (stable; usually the consumer group id).
    ///   - fetchesItself: `kafka.inbox-reader` is `native`: the consumer's poll thread fetches
    ///     the records (on a plaintext cluster) and waits while a batch is applied; false:
    ///     librdkafka fetches and the batches are polled from here (`KafkaConsumer.batches`).
    public init(name: String, consumer: KafkaConsumer, postgres: PostgresClient, router: EventRouter, logger: Logger, fetchesItself: Bool = true) {
        self.fetchesItself = fetchesItself
        self.name = name
        self.consumer = consumer
        self.postgres = postgres
        self.router = router
        self.logger = logger
        self.processed = Counter(label: "events_processed_total", dimensions: [("consumer", name)])
        self.failures = Counter(label: "event_handler_failures_total", dimensions: [("consumer", name)])
        self.skipped = Counter(label: "events_skipped_total", dimensions: [("consumer", name)])
    }

    /// Most events one shared transaction applies (its row locks are held until it commits).
    static let eventsPerTransaction = 100

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                if self.fetchesItself {
                    // The poll thread fetches the records itself (docs/benchmarks.md, part 26)
                    // and waits while a batch is applied here.
                    try await self.consumer.consumeFetching { try await self.apply($0) }
                } else {
                    for try await batch in self.consumer.batches { try await self.apply(batch.compactMap(\.message)) }
                }
            }
        } catch is CancellationError {
            // Shut down mid-batch: what was not applied was not stored, the group re-delivers it.
        }
        await consumer.close()
    }

    /// Applies a poll's records in order, `eventsPerTransaction` to a shared transaction.
    private func apply(_ messages: [KafkaConsumerMessage]) async throws {
        var start = 0
        while start < messages.count {
            let chunk = Array(messages[start..<min(messages.count, start + Self.eventsPerTransaction)])
            start += chunk.count
            if try await processTogether(chunk) { continue }
            for message in chunk { try await process(message) }
        }
    }

    /// Applies the events of `messages` that have a handler in one transaction and stores every
    /// offset after it committed; true when it did. False, with nothing applied or stored, for a
    /// single record or when anything failed (the caller then processes each record alone).
    func processTogether(_ messages: [KafkaConsumerMessage]) async throws -> Bool {
        guard messages.count > 1 else { return false }
        var work: [(KafkaConsumerMessage, CloudEventHeader, EventRouter.Handler)] = []
        for message in messages {
            guard let value = message.value else { continue }  // a tombstone: nothing to apply
            // A record that is not a CloudEvent is logged and counted by `process`.
            guard let header = try? EventCoding.header(from: value) else { return false }
            guard let handler = router.handler(for: header.type) else { continue }
            work.append((message, header, handler))
        }
        do {
            var applied = 0
            if !work.isEmpty {
                let (work, logger, name, router) = (work, logger, name, router)
                applied = try await postgres.withLiveTransaction(logger: logger) { connection in
                    // One statement claims the whole poll; a duplicate (claimed before, or twice
                    // in this poll) is skipped.
                    var toApply = try await Inbox.claim(consumer: name, eventIds: work.map(\.1.id), on: connection, logger: logger)
                    let claimed = work.filter { toApply.remove($0.1.id) != nil }
                    func context(_ item: (KafkaConsumerMessage, CloudEventHeader, EventRouter.Handler)) -> EventContext {
                        var eventLogger = logger
                        eventLogger[metadataKey: "event.id"] = "\(item.1.id.lowercased)"
                        eventLogger[metadataKey: "event.type"] = "\(item.1.type)"
                        return EventContext(connection: connection, header: item.1, message: item.0, logger: eventLogger)
                    }
                    var index = 0
                    while index < claimed.count {
                        let (message, header, handler) = claimed[index]
                        if let batch = router.batchHandler(for: header.type) {
                            // The run of this type from here: one call; its span continues the first record's trace.
                            var end = index + 1
                            while end < claimed.count, claimed[end].1.type == header.type { end += 1 }
                            let contexts = claimed[index..<end].map(context)
                            try await KafkaTracing.withConsumerSpan("\(name) \(header.type)", message: message) { _ in try await batch(contexts) }
                            index = end
                        } else {
                            try await KafkaTracing.withConsumerSpan("\(name) \(header.type)", message: message) { _ in
                                try await handler(context(claimed[index]))
                            }
                            index += 1
                        }
                    }
                    return claimed.count
                }
            }
            processed.increment(by: applied)
        } catch {
            if Task.isCancelled { throw CancellationError() }
            logger.debug("a poll's shared transaction failed; processing its records one by one", metadata: ["error": "\(String(reflecting: error))"])
            return false
        }
        for message in messages { try consumer.storeOffset(message) }
        return true
    }

    func process(_ message: KafkaConsumerMessage) async throws {
        guard let value = message.value else {
            try consumer.storeOffset(message)  // tombstone: nothing to apply
            return
        }
        let header: CloudEventHeader
        do {
            header = try EventCoding.header(from: value)
        } catch {
            skipped.increment()
            logger.error(
                "skipping a record that is not a CloudEvent",
                metadata: [
                    "kafka.topic": "\(message.topic)", "kafka.partition": "\(message.partition)", "kafka.offset": "\(message.offset)",
                ])
            try consumer.storeOffset(message)
            return
        }
        guard let handler = router.handler(for: header.type) else {
            try consumer.storeOffset(message)
            return
        }
        let eventLogger = {
            var eventLogger = logger
            eventLogger[metadataKey: "event.id"] = "\(header.id.lowercased)"
            eventLogger[metadataKey: "event.type"] = "\(header.type)"
            return eventLogger
        }()
        var backoff = Duration.milliseconds(50)
        while true {
            do {
                // A consumer span continuing the trace the record carries (a no-op without tracing);
                // events this handler writes to the outbox carry it on.
                try await KafkaTracing.withConsumerSpan("\(name) \(header.type)", message: message) { _ in
                    try await postgres.withLiveTransaction(logger: eventLogger) { connection in
                        guard try await Inbox.claim(consumer: self.name, eventId: header.id, on: connection, logger: eventLogger) else { return }
                        try await handler(EventContext(connection: connection, header: header, message: message, logger: eventLogger))
                    }
                }
                break
            } catch {
                // postgres-nio wraps the closure's error; an undecodable event is permanent.
                if let poison = (error as? UndecodableEvent) ?? ((error as? PostgresTransactionError)?.closureError as? UndecodableEvent) {
                    skipped.increment()
                    eventLogger.error(
                        "skipping an undecodable event",
                        metadata: [
                            "error": "\(poison)", "kafka.topic": "\(message.topic)", "kafka.partition": "\(message.partition)",
                            "kafka.offset": "\(message.offset)",
                        ])
                    try consumer.storeOffset(message)
                    return
                }
                if Task.isCancelled { throw CancellationError() }
                failures.increment()
                eventLogger.error("event handler failed; retrying", metadata: ["error": "\(String(reflecting: error))"])
                try await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(10))
            }
        }
        processed.increment()
        try consumer.storeOffset(message)
    }
}
