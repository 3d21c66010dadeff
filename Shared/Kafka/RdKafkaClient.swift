import CRdKafka
import Foundation
import Logging
import Synchronization

/// Receives librdkafka's callbacks for one client instance. Kept alive (retained) by the
/// `RdKafkaClient` that installed it as the configuration opaque.
final class KafkaCallbackContext: Sendable {
    let logger: Logger
    /// Who waits for a delivery report, keyed by the id passed as per-message opaque.
    let deliveries = Mutex<[UInt64: DeliveryWaiter]>([:])
    let nextDeliveryId = Atomic<UInt64>(1)
    let failedFireAndForget = Atomic<Int>(0)
    let fatalError = Mutex<KafkaError?>(nil)
    let rebalances = Atomic<Int>(0)
    let assignment = Mutex<Set<TopicPartition>>([])
    /// A consumer's catch-up after its assignment (unused by producers).
    let catchUp = KafkaCatchUp()
    /// What the rebalance callback does with the partitions it assigns (`AssignedPartitions`).
    let onAssign = Atomic<UInt8>(AssignedPartitions.leave.rawValue)
    /// While `closeConsumer` runs, its deadline: the final revoke's commit keeps to it.
    let closeDeadline = Mutex<ContinuousClock.Instant?>(nil)

    init(logger: Logger) {
        self.logger = logger
    }
}

/// What waits for one record's delivery report: a batch (and the record's position in it), or
/// a callback.
struct DeliveryWaiter: Sendable {
    let complete: @Sendable (Result<KafkaDeliveryReport, any Error>) -> Void

    init(batch: DeliveryBatch, index: Int) {
        complete = { batch.complete(index, $0) }
    }

    init(_ callback: @escaping @Sendable (Result<KafkaDeliveryReport, any Error>) -> Void) {
        complete = callback
    }
}

/// Collects the delivery reports of a batch and resumes one continuation when all are in.
final class DeliveryBatch: Sendable {
    private struct State {
        var results: [Result<KafkaDeliveryReport, any Error>?]
        var remaining: Int
        var continuation: CheckedContinuation<[Result<KafkaDeliveryReport, any Error>], Never>?
    }
    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(State(results: Array(repeating: nil, count: count), remaining: count, continuation: nil))
    }

    func complete(_ index: Int, _ result: Result<KafkaDeliveryReport, any Error>) {
        let finished = state.withLock {
            s -> (CheckedContinuation<[Result<KafkaDeliveryReport, any Error>], Never>, [Result<KafkaDeliveryReport, any Error>])? in
            guard s.results[index] == nil else { return nil }
            s.results[index] = result
            s.remaining -= 1
            guard s.remaining == 0, let c = s.continuation else { return nil }
            s.continuation = nil
            return (c, s.results.map { $0! })
        }
        finished.map { $0.0.resume(returning: $0.1) }
    }

    func wait() async -> [Result<KafkaDeliveryReport, any Error>] {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { s -> [Result<KafkaDeliveryReport, any Error>]? in
                if s.remaining == 0 { return s.results.map { $0! } }
                s.continuation = continuation
                return nil
            }
            ready.map { continuation.resume(returning: $0) }
        }
    }
}

public struct TopicPartition: Sendable, Hashable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32
    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }
    public var description: String { "\(topic)[\(partition)]" }
}

/// What a consumer's rebalance callback does with the partitions it assigns.
enum AssignedPartitions: UInt8 {
    /// Nothing: librdkafka fetches them.
    case leave
    /// Pauses them: the consumer's poll thread fetches them itself (`consumeFetchingOnPollThread`).
    case pause
    /// Resumes them: the poll thread fetched itself, then handed its partitions to librdkafka; a
    /// partition it had paused keeps librdkafka's pause flag through a revoke, so when the group
    /// assigns it here again it must be resumed.
    case resume
}

/// Owns one `rd_kafka_t`.
///
/// `@unchecked Sendable` is safe because librdkafka documents `rd_kafka_t` as thread-safe for every
/// call made through this box (produce, poll, flush, metadata, offsets_store, commit, query
/// watermarks), and the pointer itself is immutable. `rd_kafka_destroy` runs exactly once, in
/// `deinit`, when no other reference (hence no concurrent call) can exist. Consumer calls that are
/// not thread-safe against each other (poll vs. close) are serialised by `KafkaConsumer`'s queue.
final class RdKafkaClient: @unchecked Sendable {
    let pointer: OpaquePointer
    let context: KafkaCallbackContext
    private let contextRetain: Unmanaged<KafkaCallbackContext>

    enum Kind {
        case producer, consumer
    }

    init(kind: Kind, properties: [String: String], logger: Logger) throws {
        guard let conf = rd_kafka_conf_new() else { throw KafkaError.configuration("rd_kafka_conf_new failed") }
        var errstr = [CChar](repeating: 0, count: 512)
        for (key, value) in properties.sorted(by: { $0.key < $1.key }) {
            let result = rd_kafka_conf_set(conf, key, value, &errstr, errstr.count)
            if result != RD_KAFKA_CONF_OK {
                rd_kafka_conf_destroy(conf)
                throw KafkaError.configuration("invalid Kafka setting \(key): \(String(errorBuffer: errstr))")
            }
        }
        let context = KafkaCallbackContext(logger: logger)
        let retained = Unmanaged.passRetained(context)
        rd_kafka_conf_set_opaque(conf, retained.toOpaque())
        rd_kafka_conf_set_log_cb(conf, kafkaLogCallback)
        rd_kafka_conf_set_error_cb(conf, kafkaErrorCallback)
        switch kind {
        case .producer:
            rd_kafka_conf_set_dr_msg_cb(conf, kafkaDeliveryCallback)
        case .consumer:
            rd_kafka_conf_set_rebalance_cb(conf, kafkaRebalanceCallback)
        }
        // rd_kafka_new takes ownership of conf on success only.
        guard let handle = rd_kafka_new(kind == .producer ? RD_KAFKA_PRODUCER : RD_KAFKA_CONSUMER, conf, &errstr, errstr.count) else {
            rd_kafka_conf_destroy(conf)
            retained.release()
            throw KafkaError.configuration("cannot create Kafka client: \(String(errorBuffer: errstr))")
        }
        self.pointer = handle
        self.context = context
        self.contextRetain = retained
    }

    deinit {
        // On a thread of its own: librdkafka 2.0.2's `rd_kafka_destroy` can wait forever once the
        // client's brokers are gone (its broker thread waits for a reference that only the rest of
        // the destroy would drop; seen with the embedded cluster: a consumer destroyed after its
        // cluster never returns, with or without closing first), and this runs on whichever thread
        // drops the last reference — in an async context one of the cooperative pool's few, and
        // two such stalls stop every task of the process. A destroy that hangs now costs one
        // parked thread and the handle, never the caller.
        let handle = DestroyedHandle(pointer: pointer, context: contextRetain)
        let thread = Thread { handle.destroy() }
        thread.name = "kafka-destroy"
        thread.start()
    }

    /// Commits the stored offsets and waits for the coordinator's answer until `deadline`
    /// (`rd_kafka_commit` would wait forever for a coordinator that never comes back) or until
    /// `giveUp` says so. `_TIMED_OUT` when no answer came in time; the commit may still land later.
    func commitStored(until deadline: ContinuousClock.Instant, giveUp: () -> Bool = { false }) -> rd_kafka_resp_err_t {
        commitStoredOffsets(pointer, until: deadline, giveUp: giveUp)
    }

    /// Closes the consumer (final revoke with its commit, leaving the group) and serves its
    /// callbacks until it is closed, `deadline` passes or `giveUp` says so: `_TIMED_OUT` when it
    /// did not close (the handle is then destroyed without the rest of the close, see `deinit`).
    /// A revoke served here commits until `deadline` at the latest (`closeDeadline`).
    func closeConsumer(until deadline: ContinuousClock.Instant, giveUp: () -> Bool) -> Result<Void, KafkaError> {
        context.closeDeadline.withLock { $0 = deadline }
        defer { context.closeDeadline.withLock { $0 = nil } }
        guard let callbacks = rd_kafka_queue_new(pointer) else { return .failure(KafkaError(RD_KAFKA_RESP_ERR__CRIT_SYS_RESOURCE)) }
        defer { rd_kafka_queue_destroy(callbacks) }
        if let error = rd_kafka_consumer_close_queue(pointer, callbacks) {
            return .failure(KafkaError(error: error))
        }
        while rd_kafka_consumer_closed(pointer) == 0 {
            guard let slice = pollSlice(until: deadline, giveUp: giveUp) else {
                return .failure(KafkaError(RD_KAFKA_RESP_ERR__TIMED_OUT, "consumer close did not finish in time"))
            }
            // Events, not `rd_kafka_queue_poll_callback`: the queue also gets results without a
            // callback (commits, errors), which that call asserts on.
            guard let event = rd_kafka_queue_poll(callbacks, slice) else { continue }
            if rd_kafka_event_type(event) == RD_KAFKA_EVENT_REBALANCE {
                kafkaRebalanceCallback(pointer, rd_kafka_event_error(event), rd_kafka_event_topic_partition_list(event), rd_kafka_opaque(pointer))
            }
            rd_kafka_event_destroy(event)
        }
        return .success(())
    }

    /// Cluster metadata (blocking up to `timeoutMilliseconds`): topics and their partition counts.
    func metadata(timeoutMilliseconds: Int32) throws -> [String: Int] {
        var md: UnsafePointer<rd_kafka_metadata>?
        let err = rd_kafka_metadata(pointer, 1, nil, &md, timeoutMilliseconds)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let md else { throw KafkaError(err, "metadata request failed") }
        defer { rd_kafka_metadata_destroy(md) }
        var topics: [String: Int] = [:]
        for i in 0..<Int(md.pointee.topic_cnt) {
            let t = md.pointee.topics[i]
            if t.err == RD_KAFKA_RESP_ERR_NO_ERROR {
                topics[String(cString: t.topic)] = Int(t.partition_cnt)
            }
        }
        return topics
    }
}

// MARK: - C callbacks (no captures: context comes from the opaque pointer)

private func context(from opaque: UnsafeMutableRawPointer?) -> KafkaCallbackContext? {
    guard let opaque else { return nil }
    return Unmanaged<KafkaCallbackContext>.fromOpaque(opaque).takeUnretainedValue()
}

private let kafkaLogCallback: @convention(c) (OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Void = { rk, level, facility, message in
    guard let rk, let ctx = context(from: rd_kafka_opaque(rk)) else { return }
    let swiftLevel: Logger.Level
    switch level {
    case 0...2: swiftLevel = .critical
    case 3: swiftLevel = .error
    case 4: swiftLevel = .warning
    case 5: swiftLevel = .notice
    case 6: swiftLevel = .info
    default: swiftLevel = .debug
    }
    let facilityName = facility.map { String(cString: $0) } ?? ""
    // Connection failures also reach the error callback (logged there at warning level).
    let level = facilityName == "FAIL" ? Logger.Level.debug : swiftLevel
    ctx.logger.log(level: level, "\(message.map { String(cString: $0) } ?? "")", metadata: ["kafka.facility": .string(facilityName)])
}

private let kafkaErrorCallback: @convention(c) (OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> Void = { rk, code, reason, opaque in
    guard let ctx = context(from: opaque) else { return }
    let err = rd_kafka_resp_err_t(rawValue: code)
    let text = reason.map { String(cString: $0) } ?? ""
    if err == RD_KAFKA_RESP_ERR__FATAL, let rk {
        var buf = [CChar](repeating: 0, count: 512)
        let original = rd_kafka_fatal_error(rk, &buf, buf.count)
        let fatal = KafkaError(code: original.rawValue, message: "fatal Kafka error: \(String(errorBuffer: buf))", isFatal: true)
        ctx.fatalError.withLock { $0 = fatal }
        ctx.logger.critical("Kafka client failed fatally", metadata: ["kafka.error": "\(fatal.message)"])
    } else if err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__RESOLVE {
        // Retried internally by librdkafka; visible at warning level, not as an error.
        ctx.logger.warning("Kafka broker connection problem", metadata: ["kafka.error": "\(text)"])
    } else {
        ctx.logger.error("Kafka client error", metadata: ["kafka.error": "\(text)", "kafka.code": "\(code)"])
    }
}

private let kafkaDeliveryCallback: @convention(c) (OpaquePointer?, UnsafePointer<rd_kafka_message_t>?, UnsafeMutableRawPointer?) -> Void = {
    _, message, opaque in
    guard let message, let ctx = context(from: opaque) else { return }
    let m = message.pointee
    let id = UInt64(UInt(bitPattern: m._private))
    let result: Result<KafkaDeliveryReport, any Error>
    if m.err == RD_KAFKA_RESP_ERR_NO_ERROR {
        let topic = m.rkt.map { String(cString: rd_kafka_topic_name($0)) } ?? ""
        result = .success(KafkaDeliveryReport(topic: topic, partition: m.partition, offset: m.offset))
    } else {
        result = .failure(KafkaError(m.err, "delivery failed"))
    }
    if id == 0 {
        if case .failure(let error) = result {
            _ = ctx.failedFireAndForget.add(1, ordering: .relaxed)
            ctx.logger.error("Kafka delivery failed", metadata: ["kafka.error": "\(error)"])
        }
        return
    }
    let waiter = ctx.deliveries.withLock { $0.removeValue(forKey: id) }
    waiter?.complete(result)
}

/// Whether the client's group uses the cooperative (incremental) rebalance protocol.
func usesCooperativeRebalance(_ rk: OpaquePointer) -> Bool {
    String(cString: rd_kafka_rebalance_protocol(rk)) == "COOPERATIVE"
}

private let kafkaRebalanceCallback:
    @convention(c) (OpaquePointer?, rd_kafka_resp_err_t, UnsafeMutablePointer<rd_kafka_topic_partition_list_t>?, UnsafeMutableRawPointer?) -> Void = {
        rk, err, partitions, opaque in
        guard let rk, let ctx = context(from: opaque) else { return }
        let list = partitions.map(topicPartitions(from:)) ?? []
        let cooperative = usesCooperativeRebalance(rk)
        _ = ctx.rebalances.add(1, ordering: .relaxed)
        switch err {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
            ctx.logger.info("Kafka partitions assigned", metadata: ["kafka.partitions": "\(list.map(\.description).joined(separator: ","))"])
            // Until caught up, librdkafka's own fetching (not the poll thread's, which learns a
            // partition's end from its first fetch, sent without a wait) is told first where the
            // partitions start and end.
            let bounds =
                if let partitions, !ctx.catchUp.isCaughtUp, ctx.onAssign.load(ordering: .relaxed) != AssignedPartitions.pause.rawValue {
                    AssignedBounds.ask(rk, partitions, within: assignedBoundsBudget)
                } else {
                    AssignedBounds()
                }
            if cooperative {
                if let error = rd_kafka_incremental_assign(rk, partitions) { _ = KafkaError(error: error) }
                ctx.assignment.withLock { $0.formUnion(list) }
            } else {
                rd_kafka_assign(rk, partitions)
                ctx.assignment.withLock { $0 = Set(list) }
            }
            if let partitions {
                switch AssignedPartitions(rawValue: ctx.onAssign.load(ordering: .relaxed)) {
                case .pause: _ = rd_kafka_pause_partitions(rk, partitions)
                case .resume: _ = rd_kafka_resume_partitions(rk, partitions)
                case .leave, nil: break
                }
            }
            if ctx.catchUp.assigned(list) {
                ctx.logger.info("Kafka consumer caught up", metadata: ["kafka.partitions": "none assigned"])
            } else if bounds.tell(ctx.catchUp) {
                ctx.logger.info("Kafka consumer caught up", metadata: ["kafka.partitions": "at their ends when assigned"])
            }
        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
            ctx.logger.info("Kafka partitions revoked", metadata: ["kafka.partitions": "\(list.map(\.description).joined(separator: ","))"])
            // Commit what was processed so the next owner resumes right after it (bounded: with
            // the coordinator gone a plain commit would hold this callback, and a close, forever).
            // A close's revoke keeps to the close's deadline (a service's stop has Docker's 10 s).
            let ownBound = ContinuousClock.now + revokeCommitTimeout
            let until = ctx.closeDeadline.withLock { $0 }.map { min($0, ownBound) } ?? ownBound
            let commitErr = commitStoredOffsets(rk, until: until)
            if commitErr != RD_KAFKA_RESP_ERR_NO_ERROR && commitErr != RD_KAFKA_RESP_ERR__NO_OFFSET {
                ctx.logger.warning("Kafka commit on revoke failed", metadata: ["kafka.error": "\(KafkaError(commitErr))"])
            }
            if cooperative {
                if let error = rd_kafka_incremental_unassign(rk, partitions) { _ = KafkaError(error: error) }
                ctx.assignment.withLock { $0.subtract(list) }
            } else {
                rd_kafka_assign(rk, nil)
                ctx.assignment.withLock { $0 = [] }
            }
            ctx.catchUp.revoked(list, all: !cooperative)
        default:
            ctx.logger.error("Kafka rebalance failed", metadata: ["kafka.error": "\(KafkaError(err))"])
            rd_kafka_assign(rk, nil)
            ctx.assignment.withLock { $0 = [] }
            ctx.catchUp.revoked(list, all: true)
        }
    }

/// How long the rebalance callback asks where newly assigned partitions start and end.
let assignedBoundsBudget: Duration = .seconds(1)

/// How long the final commit of a revoke waits for the coordinator (during a close, no longer
/// than the close's deadline).
let revokeCommitTimeout: Duration = .seconds(5)

/// `RdKafkaClient.commitStored(until:giveUp:)` on a raw handle (the rebalance callback's).
func commitStoredOffsets(_ rk: OpaquePointer, until deadline: ContinuousClock.Instant, giveUp: () -> Bool = { false }) -> rd_kafka_resp_err_t {
    guard let replies = rd_kafka_queue_new(rk) else { return RD_KAFKA_RESP_ERR__CRIT_SYS_RESOURCE }
    defer { rd_kafka_queue_destroy(replies) }
    let err = rd_kafka_commit_queue(rk, nil, replies, nil, nil)
    guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { return err }
    while let slice = pollSlice(until: deadline, giveUp: giveUp) {
        guard let event = rd_kafka_queue_poll(replies, slice) else { continue }
        defer { rd_kafka_event_destroy(event) }
        return rd_kafka_event_error(event)
    }
    return RD_KAFKA_RESP_ERR__TIMED_OUT
}

/// The next wait of a bounded poll loop: up to 100 ms, or nil once `deadline` passed or `giveUp`
/// says so (checked between slices, so a give-up is seen within 100 ms).
private func pollSlice(until deadline: ContinuousClock.Instant, giveUp: () -> Bool) -> Int32? {
    let left = deadline - .now
    guard left > .zero, !giveUp() else { return nil }
    return min(max(left.librdkafkaMilliseconds, 1), 100)
}

/// What `RdKafkaClient.deinit` hands to its destroying thread.
///
/// `@unchecked Sendable` is safe because the handle is moved, not shared: the client that owned
/// the pointer is being deinitialised (no other reference, hence no other call, exists), and
/// `destroy()` is called exactly once, by the one thread it is handed to.
private struct DestroyedHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    let context: Unmanaged<KafkaCallbackContext>

    func destroy() {
        // The plain destroy, also for a consumer whose close was given up: with
        // RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE, librdkafka 2.0.2's main thread spins at a full
        // core for as long as the brokers stay gone (measured against the mock cluster), while
        // this waits idle. A consumer not closed yet is closed by it, on this thread.
        rd_kafka_destroy(pointer)
        context.release()  // callbacks may run until the destroy returns
    }
}

func topicPartitions(from list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) -> [TopicPartition] {
    let l = list.pointee
    return (0..<Int(l.cnt)).map { i in
        TopicPartition(topic: String(cString: l.elems[i].topic), partition: l.elems[i].partition)
    }
}
