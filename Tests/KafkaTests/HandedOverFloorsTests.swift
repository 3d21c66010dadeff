import Testing

@testable import Kafka

/// `HandedOverFloors`: what the consumer hands out after giving its partitions to librdkafka,
/// when librdkafka goes back (its 2.0.2 offset reset overriding a seek).
@Suite("Floors after a hand-over")
struct HandedOverFloorsTests {
    private let p0 = TopicPartition(topic: "t", partition: 0)
    private let p1 = TopicPartition(topic: "t", partition: 1)

    private func message(_ partition: TopicPartition, _ offset: Int64) -> KafkaConsumerEvent {
        .message(
            KafkaConsumerMessage(
                topic: partition.topic, partition: partition.partition, offset: offset, key: nil, value: nil, headers: [], timestampMilliseconds: nil))
    }

    private func offsets(_ events: [KafkaConsumerEvent]) -> [String] {
        events.map {
            switch $0 {
            case .message(let m): "\(m.partition)@\(m.offset)"
            case .endOfPartition(let p, let offset): "end \(p.partition)@\(offset)"
            }
        }
    }

    @Test("records from the floor on pass; a partition that went back to its start is dropped up to its floor and reported once per poll")
    func wentBack() {
        var floors = HandedOverFloors([p0: 20, p1: 20])
        let first = floors.filter([message(p0, 20), message(p0, 21), message(p1, 20)])
        #expect(offsets(first.kept) == ["0@20", "0@21", "1@20"])
        #expect(first.rewound.isEmpty)
        // librdkafka's late reset: partition 1 from its start, partition 0 goes on.
        let second = floors.filter([message(p1, 0), message(p1, 1), message(p0, 22), message(p1, 20), message(p1, 21)])
        #expect(offsets(second.kept) == ["0@22", "1@21"], "1@20 was handed out already")
        #expect(second.rewound == [p1: 21], "sought back to the offset after the last one handed out")
        #expect(floors.floor(of: p0) == 23)
        #expect(floors.floor(of: p1) == 22)
    }

    @Test("a gap (compaction, a transaction marker) moves the floor past it; end-of-partition markers pass untouched")
    func gapsAndEnds() {
        var floors = HandedOverFloors([p0: 5])
        let polled = floors.filter([message(p0, 9), .endOfPartition(p0, offset: 10), message(p0, 7)])
        #expect(offsets(polled.kept) == ["0@9", "end 0@10"])
        #expect(polled.rewound == [p0: 10])
    }

    @Test("a partition assigned after the hand-over is tracked from its first record")
    func laterPartition() {
        var floors = HandedOverFloors([p0: 3])
        #expect(offsets(floors.filter([message(p1, 40), message(p1, 41)]).kept) == ["1@40", "1@41"])
        #expect(offsets(floors.filter([message(p1, 40)]).kept).isEmpty)
    }

    @Test("after a rebalance only the partitions kept keep their floor: one assigned anew starts from its commit, a redelivery included")
    func rebalance() {
        var floors = HandedOverFloors([p0: 30, p1: 30])
        floors.retain([p1])
        #expect(floors.floor(of: p0) == nil)
        #expect(offsets(floors.filter([message(p0, 10), message(p1, 10)]).kept) == ["0@10"])
        floors.retain([])
        #expect(floors.isEmpty)
        #expect(offsets(floors.filter([message(p1, 10)]).kept) == ["1@10"])
    }

    @Test("a consumer starting partitions with no commit from their latest offset does not fetch itself (a late reset would skip records)")
    func latestDoesNotFetchItself() {
        var configuration = KafkaConsumerConfiguration(
            client: KafkaClientConfiguration(bootstrapServers: "127.0.0.1:9092", clientId: "c"), mode: .group(id: "g", topics: ["t"]))
        #expect(KafkaConsumer.canFetchItself(configuration))
        configuration.autoOffsetReset = .latest
        #expect(!KafkaConsumer.canFetchItself(configuration))
    }
}
