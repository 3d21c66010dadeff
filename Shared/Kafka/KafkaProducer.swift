import CRdKafka
import Common
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Idempotent producer (acks=all) as a `Service`.
///
/// Delivery reports are served by a dedicated poll thread, so a `sendAndAwait` resumes as soon as
/// the broker acknowledges, and no librdkafka call ever blocks the cooperative thread pool.
/// `run()` keeps the producer alive until graceful shutdown, then flushes what is buffered.
public final class KafkaProducer: Service, Sendable {
    let client: RdKafkaClient
    /// Serves the delivery reports; nil when the caller of `sendAllBlocking` serves them
    /// (`KafkaBlockingProducer`).
    private let poller: PollThread?
    private let logger: Logger
    public let configuration: KafkaProducerConfiguration

    public convenience init(configuration: KafkaProducerConfiguration, logger: Logger) throws {
        try self.init(configuration: configuration, logger: logger, pollThread: true)
    }

    /// - Parameter pollThread: whether a thread of its own serves the delivery reports; without
    ///   one, only `sendAllBlocking` (which then serves them itself) and `run` may be used.
    init(configuration: KafkaProducerConfiguration, logger: Logger, pollThread: Bool) throws {
        self.configuration = configuration
        self.logger = logger
        self.client = try RdKafkaClient(kind: .producer, properties: configuration.librdkafkaProperties, logger: logger)
        self.poller = pollThread ? PollThread(client: client, name: "kafka-producer-poll") : nil
    }

    deinit {
        poller?.requestStop()
    }

    /// Enqueues a record without waiting for the broker; failures are logged and counted.
    /// Waits (asynchronously) only while the client's buffer is full.
    public func send(_ message: KafkaProducerMessage) async throws {
        try await produce(message, opaqueId: 0)
    }

    /// Enqueues a record and waits for its delivery report (the broker's acknowledgement).
    public func sendAndAwait(_ message: KafkaProducerMessage) async throws -> KafkaDeliveryReport {
        guard let result = await sendAllAndAwait([message]).first else { throw KafkaError.closed }
        return try result.get()
    }

    /// Enqueues a record without waiting for the broker, like `send`, and calls `onDelivery`
    /// with its delivery report (on the producer's poll thread: keep it short).
    public func send(_ message: KafkaProducerMessage, onDelivery: @escaping @Sendable (Result<KafkaDeliveryReport, any Error>) -> Void) async throws {
        let id = track(DeliveryWaiter(onDelivery))
        do {
            try await produce(message, opaqueId: id)
        } catch {
            untrack(id)
            throw error
        }
    }

    /// Enqueues records in order and waits for all of their delivery reports, returning one
    /// outcome per record. Order within a partition is kept (idempotent producer).
    public func sendAllAndAwait(_ messages: [KafkaProducerMessage]) async -> [Result<KafkaDeliveryReport, any Error>] {
        guard !messages.isEmpty else { return [] }
        let batch = DeliveryBatch(count: messages.count)
        for (index, message) in messages.enumerated() {
            let id = track(DeliveryWaiter(batch: batch, index: index))
            do {
                try await produce(message, opaqueId: id)
            } catch {
                untrack(id)?.complete(.failure(error))
            }
        }
        return await batch.wait()
    }

    /// `sendAllAndAwait` for a thread that may block (a consumer's poll thread, see
    /// `KafkaConsumer.consumeOnPollThread`): enqueues in order, waiting while the client's buffer
    /// is full, then blocks until every record has its delivery report (each comes within
    /// `message.timeout.ms`). Never call it from the cooperative pool.
    public func sendAllBlocking(_ messages: [KafkaProducerMessage]) -> [Result<KafkaDeliveryReport, any Error>] {
        guard !messages.isEmpty else { return [] }
        let results = Mutex<[Result<KafkaDeliveryReport, any Error>?]>(Array(repeating: nil, count: messages.count))
        let remaining = Atomic<Int>(messages.count)
        // With a poll thread, its callback wakes this one; without, this thread serves the
        // reports itself (`rd_kafka_poll` runs the callbacks here): one thread hop fewer per batch.
        let done = poller == nil ? nil : DispatchSemaphore(value: 0)
        for (index, message) in messages.enumerated() {
            let waiter = DeliveryWaiter { result in
                results.withLock { $0[index] = result }
                remaining.subtract(1, ordering: .releasing)
                done?.signal()
            }
            let id = track(waiter)
            do {
                try produceBlocking(message, opaqueId: id)
            } catch {
                untrack(id)?.complete(.failure(error))
            }
        }
        if let done {
            for _ in messages { done.wait() }
        } else {
            // Each report comes within `message.timeout.ms`; the wait ends at the first one.
            while remaining.load(ordering: .acquiring) > 0 { rd_kafka_poll(client.pointer, 100) }
        }
        return results.withLock { $0.map { $0 ?? .failure(KafkaError.closed) } }
    }

    /// Waits until every buffered record has a delivery report or `timeout` passes.
    public func flush(timeout: Duration = .seconds(10)) async throws {
        let deadline = ContinuousClock.now + timeout
        while rd_kafka_outq_len(client.pointer) > 0 {
            if ContinuousClock.now >= deadline {
                throw KafkaError.timedOut("flush timed out with \(rd_kafka_outq_len(client.pointer)) records undelivered")
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// Topics and partition counts the cluster reports; fails when no broker answers in time.
    public func metadata(timeout: Duration = .seconds(5)) async throws -> [String: Int] {
        let client = self.client
        let ms = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        return try await runBlocking { try client.metadata(timeoutMilliseconds: ms) }
    }

    /// Records enqueued but not yet acknowledged.
    public var outstanding: Int { Int(rd_kafka_outq_len(client.pointer)) }

    public func run() async throws {
        try? await gracefulShutdown()
        // Also reached when the task is cancelled rather than shut down gracefully: the flush
        // blocks on a Dispatch thread (a cancellation-aware sleep would end it at once), and what
        // is still undelivered after it is purged, so every `sendAndAwait` gets its report (an
        // error for purged records) before the poll thread stops — no caller waits forever.
        let client = self.client
        let undelivered =
            (try? await runBlocking { () -> Int32 in
                _ = rd_kafka_flush(client.pointer, 10_000)
                return rd_kafka_outq_len(client.pointer)
            }) ?? rd_kafka_outq_len(client.pointer)
        if undelivered > 0 {
            logger.error("Kafka producer shut down with undelivered records", metadata: ["kafka.undelivered": "\(undelivered)"])
            _ = rd_kafka_purge(client.pointer, Int32(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT))
            // The purged records' reports (errors), for callers waiting on them.
            if poller == nil { rd_kafka_poll(client.pointer, 0) }
        }
        poller?.requestStop()
        await poller?.join()
    }

    /// Registers `waiter` for a record's delivery report; the id to produce the record with.
    private func track(_ waiter: DeliveryWaiter) -> UInt64 {
        let id = client.context.nextDeliveryId.wrappingAdd(1, ordering: .relaxed).oldValue
        client.context.deliveries.withLock { $0[id] = waiter }
        return id
    }

    /// The waiter of a record that was never enqueued (it gets no report).
    @discardableResult
    private func untrack(_ id: UInt64) -> DeliveryWaiter? {
        client.context.deliveries.withLock { $0.removeValue(forKey: id) }
    }

    /// Enqueues `message`, waiting 1 ms at a time while the client's buffer is full (at most
    /// `message.timeout.ms`).
    private func produce(_ message: KafkaProducerMessage, opaqueId: UInt64) async throws {
        let deadline = try produceDeadline()
        while try !enqueued(message, opaqueId: opaqueId, deadline: deadline) {
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// `produce` for a thread that may block.
    private func produceBlocking(_ message: KafkaProducerMessage, opaqueId: UInt64) throws {
        let deadline = try produceDeadline()
        while try !enqueued(message, opaqueId: opaqueId, deadline: deadline) {
            // A full buffer empties as reports are served: by the poll thread, or here.
            if poller == nil { rd_kafka_poll(client.pointer, 1) } else { usleep(1_000) }
        }
    }

    /// How long a record may wait for room in the buffer; throws once the producer failed fatally.
    private func produceDeadline() throws -> ContinuousClock.Instant {
        if let fatal = client.context.fatalError.withLock({ $0 }) { throw fatal }
        return ContinuousClock.now + .milliseconds(configuration.messageTimeoutMilliseconds)
    }

    /// One attempt: true when enqueued, false when the buffer is full before `deadline` (try again).
    private func enqueued(_ message: KafkaProducerMessage, opaqueId: UInt64, deadline: ContinuousClock.Instant) throws -> Bool {
        let err = enqueue(message, opaqueId: opaqueId)
        if err == RD_KAFKA_RESP_ERR_NO_ERROR { return true }
        if err == RD_KAFKA_RESP_ERR__QUEUE_FULL, ContinuousClock.now < deadline { return false }
        throw KafkaError(err, "produce to \(message.topic) failed")
    }

    private func enqueue(_ message: KafkaProducerMessage, opaqueId: UInt64) -> rd_kafka_resp_err_t {
        var headers: OpaquePointer?
        if !message.headers.isEmpty {
            headers = rd_kafka_headers_new(message.headers.count)
            for h in message.headers {
                if let value = h.value {
                    value.withUnsafeBytes { _ = rd_kafka_header_add(headers, h.key, -1, $0.baseAddress, $0.count) }
                } else {
                    _ = rd_kafka_header_add(headers, h.key, -1, nil, 0)
                }
            }
        }
        let opaque = UnsafeMutableRawPointer(bitPattern: UInt(opaqueId))
        let partition = message.partition ?? -1  // RD_KAFKA_PARTITION_UA
        let err = withOptionalBytes(message.key) { keyPtr, keyLen in
            withOptionalBytes(message.value) { valuePtr, valueLen in
                chatsuite_produce(client.pointer, message.topic, partition, keyPtr, keyLen, valuePtr, valueLen, headers, opaque)
            }
        }
        if err != RD_KAFKA_RESP_ERR_NO_ERROR, let headers {
            rd_kafka_headers_destroy(headers)
        }
        return err
    }
}

private func withOptionalBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeRawPointer?, Int) -> R) -> R {
    guard let bytes else { return body(nil, 0) }
    if bytes.isEmpty {
        // A non-NULL pointer with length 0 is an empty (not null) key/value.
        var zero: UInt8 = 0
        return withUnsafePointer(to: &zero) { body(UnsafeRawPointer($0), 0) }
    }
    return bytes.withUnsafeBytes { body($0.baseAddress, $0.count) }
}

/// A dedicated thread serving a client's callbacks (`rd_kafka_poll`) until asked to stop.
final class PollThread: Sendable {
    private let stop = Atomic<Bool>(false)
    private let finished = Latch()

    init(client: RdKafkaClient, name: String) {
        let thread = Thread { [self] in
            while !self.stop.load(ordering: .relaxed) {
                rd_kafka_poll(client.pointer, 50)
            }
            rd_kafka_poll(client.pointer, 0)
            self.finished.open()
        }
        thread.name = name
        thread.start()
    }

    func requestStop() {
        stop.store(true, ordering: .relaxed)
    }

    func join() async {
        await finished.wait()
    }
}
