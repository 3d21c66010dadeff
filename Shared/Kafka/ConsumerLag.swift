import CRdKafka
import Metrics
import Synchronization

/// `kafka_consumer_lag{consumer, topic}`: records a consumer's assigned partitions hold beyond its
/// position (the high watermark the fetcher last saw minus the next offset to read), summed per
/// topic. Updated from the poll loop at most once a second, from librdkafka's cached values (no
/// broker round trip); a partition without a known position or watermark yet is left out.
final class ConsumerLag: Sendable {
    private let consumer: String
    private let gauges = Mutex<[String: Gauge]>([:])
    private let lastUpdate = Mutex<ContinuousClock.Instant?>(nil)
    static let interval: Duration = .seconds(1)

    init(consumer: String) {
        self.consumer = consumer
    }

    /// Whether a second passed since the last update (and this call is then the update).
    private func due() -> Bool {
        let now = ContinuousClock.now
        return lastUpdate.withLock { last -> Bool in
            if let last, now - last < Self.interval { return false }
            last = now
            return true
        }
    }

    /// Records lag the caller worked out itself (a consumer that fetches without librdkafka), at
    /// most once a second: `lag()` is asked only then.
    func update(_ lag: () -> [String: Int64]) {
        guard due() else { return }
        for (topic, lag) in lag() { gauge(topic).record(lag) }
    }

    /// On the consumer's queue (the calls are not thread-safe against close).
    func update(client: RdKafkaClient, assignment: Set<TopicPartition>) {
        guard due() else { return }
        var perTopic: [String: Int64] = [:]
        for topic in Set(assignment.map(\.topic)) { perTopic[topic] = 0 }
        if !assignment.isEmpty, let list = rd_kafka_topic_partition_list_new(Int32(assignment.count)) {
            defer { rd_kafka_topic_partition_list_destroy(list) }
            for partition in assignment { rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition) }
            if rd_kafka_position(client.pointer, list) == RD_KAFKA_RESP_ERR_NO_ERROR {
                for i in 0..<Int(list.pointee.cnt) {
                    let element = list.pointee.elems[i]
                    guard element.offset >= 0, let name = element.topic else { continue }
                    var low: Int64 = -1
                    var high: Int64 = -1
                    guard rd_kafka_get_watermark_offsets(client.pointer, name, element.partition, &low, &high) == RD_KAFKA_RESP_ERR_NO_ERROR, high >= 0
                    else { continue }
                    perTopic[String(cString: name), default: 0] += max(0, high - element.offset)
                }
            }
        }
        for (topic, lag) in perTopic { gauge(topic).record(lag) }
    }

    private func gauge(_ topic: String) -> Gauge {
        gauges.withLock { gauges in
            if let gauge = gauges[topic] { return gauge }
            let gauge = Gauge(label: "kafka_consumer_lag", dimensions: [("consumer", consumer), ("topic", topic)])
            gauges[topic] = gauge
            return gauge
        }
    }
}
