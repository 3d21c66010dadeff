import CRdKafka

/// What a librdkafka group member learns about newly assigned partitions before it fetches them,
/// for its catch-up: where it will start (the group's committed offsets) and where each partition
/// ends. Asked in the rebalance callback before the assignment takes effect, while no fetch of
/// theirs is in flight: a broker answers one connection's requests in order, so a question sent
/// behind a long poll would wait it out. A partition committed up to its end is then caught up
/// without a fetch answer, which comes only once a long poll is over.
struct AssignedBounds {
    var starts: [TopicPartition: Int64] = [:]
    var ends: [TopicPartition: Int64] = [:]

    /// One OffsetFetch for all of `partitions`, then one ListOffsets (latest) per leader, both
    /// within `budget` (a coordinator or leader that does not answer holds the callback no longer;
    /// what is not known then is learnt from the fetches, as before).
    static func ask(
        _ rk: OpaquePointer, _ partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>, within budget: Duration
    ) -> AssignedBounds {
        var bounds = AssignedBounds()
        let end = ContinuousClock.now + budget
        bounds.starts = offsets(of: partitions, end: end) { rd_kafka_committed(rk, $0, $1) }
        let left = ContinuousClock.now.duration(to: end)
        guard left > .milliseconds(1) else { return bounds }
        bounds.ends = offsets(of: partitions, end: end) { list, timeout in
            // Timestamp -1 asks for the latest offset: each partition's end (high watermark).
            for i in 0..<Int(list.pointee.cnt) { list.pointee.elems[i].offset = -1 }
            return rd_kafka_offsets_for_times(rk, list, timeout)
        }
        return bounds
    }

    /// The offsets `query` fills into a copy of `partitions` (those it found).
    private static func offsets(
        of partitions: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>, end: ContinuousClock.Instant,
        _ query: (UnsafeMutablePointer<rd_kafka_topic_partition_list_t>, Int32) -> rd_kafka_resp_err_t
    ) -> [TopicPartition: Int64] {
        guard partitions.pointee.cnt > 0, let list = rd_kafka_topic_partition_list_copy(partitions) else { return [:] }
        defer { rd_kafka_topic_partition_list_destroy(list) }
        guard query(list, ContinuousClock.now.duration(to: end).librdkafkaMilliseconds) == RD_KAFKA_RESP_ERR_NO_ERROR else { return [:] }
        var offsets: [TopicPartition: Int64] = [:]
        for i in 0..<Int(list.pointee.cnt) {
            let element = list.pointee.elems[i]
            guard element.err == RD_KAFKA_RESP_ERR_NO_ERROR, element.offset >= 0, let topic = element.topic else { continue }
            offsets[TopicPartition(topic: String(cString: topic), partition: element.partition)] = element.offset
        }
        return offsets
    }

    /// Tells `catchUp` (after the assignment). True when this completed it.
    func tell(_ catchUp: KafkaCatchUp) -> Bool {
        var completed = false
        for (partition, offset) in starts where catchUp.starts(at: offset, for: partition) { completed = true }
        for (partition, end) in ends where catchUp.observed(low: -1, high: end, for: partition) { completed = true }
        return completed
    }
}
