import Synchronization

/// Whether one consumer has caught up: it has its assignment (a group member: the first
/// assignment of its group; a reader: its fixed partitions) and the application has processed
/// every record its partitions held when they were assigned.
///
/// "Processed" means the application asked the consumer's sequence for the next element after
/// the record (a `for try await` body finished with it). A partition is caught up when the
/// processed position reaches the end offset (high watermark) first seen for it after the
/// assignment, or when an end-of-partition event was passed (the fetcher reached the end after
/// the assignment, so past every record the partition held then: this also covers a group that
/// had committed everything, and readers starting at the end). Once the whole assignment is
/// caught up the consumer stays caught up: partitions a later rebalance moves here are normal
/// work, not start-up.
public final class KafkaCatchUp: Sendable {
    private struct State {
        var assigned = false
        /// Partitions not caught up yet → the end offset to reach (nil until known).
        var behind: [TopicPartition: Int64?] = [:]
        /// Next offset to process per partition still behind (offset of the last processed + 1).
        var position: [TopicPartition: Int64] = [:]
    }

    private let state = Mutex(State())
    private let done = Atomic<Bool>(false)
    private let closed = Atomic<Bool>(false)

    init() {}

    /// Caught up (and not closed).
    public var isCaughtUp: Bool { done.load(ordering: .acquiring) && !closed.load(ordering: .acquiring) }

    /// A short state for readiness answers: "caught up", "closed", "waiting for assignment",
    /// or "n partitions behind".
    public var summary: String {
        if closed.load(ordering: .acquiring) { return "closed" }
        if done.load(ordering: .acquiring) { return "caught up" }
        return state.withLock { s in
            s.assigned ? "\(s.behind.count) partition(s) behind" : "waiting for assignment"
        }
    }

    func markClosed() { closed.store(true, ordering: .releasing) }

    /// Partitions the consumer got (the rebalance callback, or a reader's fixed assignment).
    /// Returns true when this completed the catch-up (an empty assignment).
    @discardableResult
    func assigned(_ partitions: [TopicPartition]) -> Bool {
        guard !done.load(ordering: .acquiring) else { return false }
        return state.withLock { s in
            s.assigned = true
            for partition in partitions where s.behind[partition] == nil {
                s.behind[partition] = .some(nil)
            }
            return completeIfDone(&s)
        }
    }

    /// Partitions taken away; `all` for an eager rebalance that revokes the whole assignment (a
    /// new assignment follows, which the catch-up then waits for).
    func revoked(_ partitions: [TopicPartition], all: Bool) {
        guard !done.load(ordering: .acquiring) else { return }
        state.withLock { s in
            for partition in partitions {
                s.behind[partition] = nil
                s.position[partition] = nil
            }
            if all {
                s.behind = [:]
                s.position = [:]
                s.assigned = false
            }
        }
    }

    /// Partitions still behind whose end offset is not known yet.
    func partitionsWithoutEnd() -> [TopicPartition] {
        guard !done.load(ordering: .acquiring) else { return [] }
        return state.withLock { s in s.behind.compactMap { $0.value == nil ? $0.key : nil } }
    }

    /// The watermarks first seen for a partition still behind: the end to reach is the high
    /// watermark; an empty partition (low = high) holds nothing to process.
    @discardableResult
    func observed(low: Int64, high: Int64, for partition: TopicPartition) -> Bool {
        guard !done.load(ordering: .acquiring), high >= 0 else { return false }
        return state.withLock { s in
            guard let end = s.behind[partition], end == nil else { return false }
            // low is unknown (negative) unless librdkafka statistics are on.
            if high == 0 || (low >= 0 && high <= low) || (s.position[partition] ?? -1) >= high {
                s.behind[partition] = nil
            } else {
                s.behind[partition] = .some(high)
            }
            return completeIfDone(&s)
        }
    }

    /// Where the consumer starts reading a partition still behind (a group member's committed
    /// offset): a start at or past the end to reach leaves nothing to process there.
    @discardableResult
    func starts(at offset: Int64, for partition: TopicPartition) -> Bool {
        guard !done.load(ordering: .acquiring), offset >= 0 else { return false }
        return state.withLock { s in
            guard let end = s.behind[partition] else { return false }
            if let end, offset >= end {
                s.behind[partition] = nil
                s.position[partition] = nil
            } else {
                s.position[partition] = max(s.position[partition] ?? offset, offset)
            }
            return completeIfDone(&s)
        }
    }

    /// The application is done with `event`. Returns true when this completed the catch-up.
    @discardableResult
    func processed(_ event: KafkaConsumerEvent) -> Bool {
        guard !done.load(ordering: .acquiring) else { return false }
        return state.withLock { s in
            switch event {
            case .message(let message):
                let partition = TopicPartition(topic: message.topic, partition: message.partition)
                guard let end = s.behind[partition] else { return false }
                let next = message.offset + 1
                if let end, next >= end {
                    s.behind[partition] = nil
                    s.position[partition] = nil
                } else {
                    s.position[partition] = max(s.position[partition] ?? next, next)
                }
            case .endOfPartition(let partition, _):
                guard s.behind[partition] != nil else { return false }
                s.behind[partition] = nil
                s.position[partition] = nil
            }
            return completeIfDone(&s)
        }
    }

    private func completeIfDone(_ s: inout State) -> Bool {
        guard s.assigned, s.behind.isEmpty, !done.load(ordering: .acquiring) else { return false }
        done.store(true, ordering: .releasing)
        return true
    }
}
