import CRdKafka

extension KafkaConsumer {
    /// For each partition, the earliest offset whose record timestamp is at or after
    /// `milliseconds` (Unix ms; Kafka's ListOffsets by time). A partition without such a record
    /// maps to nil: nothing at or after that time (read from its end).
    public func offsets(atOrAfter milliseconds: Int64, partitions: [TopicPartition], timeout: Duration = .seconds(10)) async throws
        -> [TopicPartition: Int64?]
    {
        let client = self.client
        let ms = Int32(timeout.components.seconds * 1000)
        return try await runBlocking {
            let list = rd_kafka_topic_partition_list_new(Int32(partitions.count))
            defer { rd_kafka_topic_partition_list_destroy(list) }
            for p in partitions {
                rd_kafka_topic_partition_list_add(list, p.topic, p.partition)?.pointee.offset = milliseconds
            }
            let err = rd_kafka_offsets_for_times(client.pointer, list, ms)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(err, "offsets for times failed") }
            var result: [TopicPartition: Int64?] = [:]
            guard let list else { return result }
            for i in 0..<Int(list.pointee.cnt) {
                let element = list.pointee.elems[i]
                let partition = TopicPartition(topic: String(cString: element.topic), partition: element.partition)
                guard element.err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(element.err, "offset for time of \(partition) failed") }
                result[partition] = element.offset >= 0 ? element.offset : nil
            }
            return result
        }
    }
}
