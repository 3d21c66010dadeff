import CRdKafka

public struct KafkaHeader: Sendable, Hashable {
    public var key: String
    public var value: [UInt8]?

    public init(key: String, value: [UInt8]?) {
        self.key = key
        self.value = value
    }

    public init(key: String, string: String) {
        self.init(key: key, value: Array(string.utf8))
    }
}

public struct KafkaProducerMessage: Sendable {
    public var topic: String
    public var key: [UInt8]?
    /// nil produces a tombstone (deletes the key from a compacted topic).
    public var value: [UInt8]?
    public var headers: [KafkaHeader]
    /// nil lets the partitioner choose (by key hash, murmur2 like the Java client).
    public var partition: Int32?

    public init(topic: String, key: [UInt8]?, value: [UInt8]?, headers: [KafkaHeader] = [], partition: Int32? = nil) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
        self.partition = partition
    }

    public init(topic: String, key: String?, value: [UInt8]?, headers: [KafkaHeader] = [], partition: Int32? = nil) {
        self.init(topic: topic, key: key.map { Array($0.utf8) }, value: value, headers: headers, partition: partition)
    }
}

public struct KafkaDeliveryReport: Sendable, Hashable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
}

public struct KafkaConsumerMessage: Sendable, Hashable {
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    public var key: [UInt8]?
    public var value: [UInt8]?
    public var headers: [KafkaHeader]
    /// Record timestamp in Unix milliseconds (create time), or nil when absent.
    public var timestampMilliseconds: Int64?

    public var keyString: String? { key.map { String(decoding: $0, as: UTF8.self) } }

    public func header(_ name: String) -> [UInt8]? {
        headers.first { $0.key == name }?.value
    }

    init(topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8]?, headers: [KafkaHeader], timestampMilliseconds: Int64?) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
        self.timestampMilliseconds = timestampMilliseconds
    }

    init(_ m: UnsafeMutablePointer<rd_kafka_message_t>) {
        let msg = m.pointee
        topic = msg.rkt.map { String(cString: rd_kafka_topic_name($0)) } ?? ""
        partition = msg.partition
        offset = msg.offset
        key = msg.key.map { Array(UnsafeRawBufferPointer(start: $0, count: msg.key_len)) }
        value = msg.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: msg.len)) }
        var tsType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let ts = rd_kafka_message_timestamp(m, &tsType)
        timestampMilliseconds = tsType == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? nil : ts
        var headerList: [KafkaHeader] = []
        var hdrs: OpaquePointer?
        if rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR, let hdrs {
            var index = 0
            var name: UnsafePointer<CChar>?
            var value: UnsafeRawPointer?
            var size = 0
            while rd_kafka_header_get_all(hdrs, index, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
                headerList.append(
                    KafkaHeader(
                        key: name.map { String(cString: $0) } ?? "",
                        value: value.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) }
                    ))
                index += 1
            }
        }
        headers = headerList
    }
}

public enum KafkaConsumerEvent: Sendable, Hashable {
    case message(KafkaConsumerMessage)
    /// Emitted when `reportEndOfPartition` is on and the consumer caught up with a partition.
    case endOfPartition(TopicPartition, offset: Int64)

    /// The record, for `.message`; nil for a marker.
    public var message: KafkaConsumerMessage? {
        if case .message(let message) = self { return message }
        return nil
    }
}
