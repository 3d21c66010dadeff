/// After `consumeFetchingOnPollThread` handed its partitions to librdkafka: per partition the next
/// offset not yet handed out, so librdkafka cannot hand out a record twice.
///
/// librdkafka 2.0.2 loses a seek made while its own offset reset is in flight (a partition with
/// no committed offset, assigned a moment before): the reset's answer comes back outdated, restarts
/// the reset, and the partition goes back to its first offset, before or after the records from
/// the seek were fetched (seen in `OwnFetchTests` under load). A record below its partition's
/// floor was handed out already: it is dropped, and the partition is sought to its floor again
/// (librdkafka's reset has then ended, and the seek holds). With `auto.offset.reset=latest` such a
/// reset would skip records instead, which cannot be told from a compacted gap: that
/// configuration does not fetch itself (`KafkaConsumer.canFetchItself`).
struct HandedOverFloors {
    private var floors: [TopicPartition: Int64]

    init(_ positions: [TopicPartition: Int64]) {
        floors = positions
    }

    var isEmpty: Bool { floors.isEmpty }

    func floor(of partition: TopicPartition) -> Int64? { floors[partition] }

    /// `events` without the records below their partition's floor, the floors raised past the
    /// records kept, and the partitions that went back (to be sought to their floor).
    mutating func filter(_ events: [KafkaConsumerEvent]) -> (kept: [KafkaConsumerEvent], rewound: [TopicPartition: Int64]) {
        guard !floors.isEmpty else { return (events, [:]) }
        var kept: [KafkaConsumerEvent] = []
        kept.reserveCapacity(events.count)
        var rewound: [TopicPartition: Int64] = [:]
        for event in events {
            guard case .message(let message) = event else {
                kept.append(event)
                continue
            }
            let partition = TopicPartition(topic: message.topic, partition: message.partition)
            if let floor = floors[partition], message.offset < floor {
                rewound[partition] = floor
                continue
            }
            floors[partition] = message.offset + 1
            kept.append(event)
        }
        return (kept, rewound)
    }

    /// After a rebalance: only `kept` partitions keep their floor (a cooperative rebalance leaves
    /// them fetching where they are). A partition assigned anew starts from its commit, with no
    /// reset of librdkafka's in flight.
    mutating func retain(_ kept: Set<TopicPartition>) {
        floors = floors.filter { kept.contains($0.key) }
    }
}
