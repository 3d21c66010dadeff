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

    /// On the consumer's queue (the calls are not thread-safe against close).
    func update(client: RdKafkaClient, assignment: Set<TopicPartition>) {
        let now = ContinuousClock.now
        let due = lastUpdate.withLock { last -> Bool in
            if let last, now - last < Self.interval { return false }
            last = now
            return true
        }
        guard due else { return }
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
