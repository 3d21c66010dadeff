import CRdKafka
import NIOCore

/// The three requests a partition reader makes, at versions every broker it meets serves: the
/// suite's embedded broker (Fetch 4–5, ListOffsets 1–2, Metadata 0–4), librdkafka's mock
/// cluster, and Apache Kafka 3.x and 4.x (whose oldest are Fetch 4, ListOffsets 1, Metadata 0).
enum KafkaClientMessages {
    static let metadataVersion: Int16 = 1
    static let listOffsetsVersion: Int16 = 1
    static let fetchVersion: Int16 = 4

    // MARK: Metadata v1

    static func metadataRequest(topic: String) -> ByteBuffer {
        var out = ByteBuffer()
        out.writeKafkaArray([topic]) { $0.writeKafkaString($1) }
        return out
    }

    /// Where a partition's leader is, from a Metadata v1 answer: its address, or the error that
    /// keeps it from being known (the topic or partition unknown, no leader elected yet).
    static func leader(of topic: String, partition: Int32, in answer: ByteBuffer) throws -> Result<KafkaBrokerAddress, KafkaErrorCode> {
        var reader = KafkaReader(answer)
        let brokers =
            try reader.array { r -> (Int32, KafkaBrokerAddress) in
                let node = try r.int32()
                let host = try r.string()
                let port = try r.int32()
                _ = try r.nullableString()  // rack
                return (node, KafkaBrokerAddress(host: host, port: Int(port)))
            } ?? []
        _ = try reader.int32()  // controller
        let topics =
            try reader.array { r -> (String, Int16, [(Int16, Int32, Int32)]) in
                let error = try r.int16()
                let name = try r.string()
                _ = try r.int8()  // is_internal
                let partitions =
                    try r.array { p -> (Int16, Int32, Int32) in
                        let error = try p.int16()
                        let index = try p.int32()
                        let leader = try p.int32()
                        _ = try p.array { try $0.int32() }  // replicas
                        _ = try p.array { try $0.int32() }  // in-sync replicas
                        return (error, index, leader)
                    } ?? []
                return (name, error, partitions)
            } ?? []
        guard let (_, topicError, partitions) = topics.first(where: { $0.0 == topic }) else {
            return .failure(KafkaErrorCode.unknownTopicOrPartition)
        }
        guard topicError == 0 else { return .failure(KafkaErrorCode(rawValue: topicError)) }
        guard let (error, _, leader) = partitions.first(where: { $0.1 == partition }) else {
            return .failure(KafkaErrorCode.unknownTopicOrPartition)
        }
        // A partition whose leader is not available yet answers -1 (with or without an error).
        guard leader >= 0, let address = brokers.first(where: { $0.0 == leader })?.1 else {
            return .failure(error != 0 ? KafkaErrorCode(rawValue: error) : KafkaErrorCode.leaderNotAvailable)
        }
        return .success(address)
    }

    // MARK: ListOffsets v1

    /// Kafka's timestamps for "the next offset to be written" and "the first offset kept".
    static let latest: Int64 = -1
    static let earliest: Int64 = -2

    static func listOffsetsRequest(topic: String, partition: Int32, timestamp: Int64) -> ByteBuffer {
        var out = ByteBuffer()
        out.writeKafka(Int32(-1))  // replica id: a client
        out.writeKafka(Int32(1))
        out.writeKafkaString(topic)
        out.writeKafka(Int32(1))
        out.writeKafka(partition)
        out.writeKafka(timestamp)
        return out
    }

    static func listedOffset(of topic: String, partition: Int32, in answer: ByteBuffer) throws -> Result<Int64, KafkaErrorCode> {
        var reader = KafkaReader(answer)
        let topics =
            try reader.array { r -> (String, [(Int32, Int16, Int64)]) in
                let name = try r.string()
                let partitions =
                    try r.array { p -> (Int32, Int16, Int64) in
                        let index = try p.int32()
                        let error = try p.int16()
                        _ = try p.int64()  // timestamp
                        return (index, error, try p.int64())
                    } ?? []
                return (name, partitions)
            } ?? []
        guard let (_, error, offset) = topics.first(where: { $0.0 == topic })?.1.first(where: { $0.0 == partition }) else {
            throw KafkaWireError("ListOffsets answered without the partition asked for")
        }
        return error == 0 ? .success(offset) : .failure(KafkaErrorCode(rawValue: error))
    }

    // MARK: Fetch v4

    static func fetchRequest(topic: String, partition: Int32, offset: Int64, maxWaitMilliseconds: Int32, minBytes: Int32, maxBytes: Int32) -> ByteBuffer {
        var out = ByteBuffer()
        out.writeKafka(Int32(-1))  // replica id: a client
        out.writeKafka(maxWaitMilliseconds)
        out.writeKafka(minBytes)
        out.writeKafka(maxBytes)
        out.writeKafka(Int8(0))  // read uncommitted: the suite's producers are idempotent, not transactional
        out.writeKafka(Int32(1))
        out.writeKafkaString(topic)
        out.writeKafka(Int32(1))
        out.writeKafka(partition)
        out.writeKafka(offset)
        out.writeKafka(maxBytes)  // partition max bytes: one partition is asked for
        return out
    }

    /// One partition's part of a Fetch v4 answer.
    struct FetchedPartition {
        var error: Int16
        var highWatermark: Int64
        /// The record batches (nil or empty: none), the last one possibly cut short.
        var records: ByteBuffer?
    }

    static func fetchedPartition(_ topic: String, _ partition: Int32, in answer: ByteBuffer) throws -> FetchedPartition {
        var reader = KafkaReader(answer)
        _ = try reader.int32()  // throttle time
        var found: FetchedPartition?
        _ = try reader.array { r -> Void in
            let name = try r.string()
            _ = try r.array { p -> Void in
                let index = try p.int32()
                let error = try p.int16()
                let highWatermark = try p.int64()
                _ = try p.int64()  // last stable offset
                _ = try p.array { a -> Void in
                    _ = try a.int64()  // producer id
                    _ = try a.int64()  // first offset
                }
                let records = try p.nullableBytes()
                if name == topic, index == partition {
                    found = FetchedPartition(error: error, highWatermark: highWatermark, records: records)
                }
            }
        }
        guard let found else { throw KafkaWireError("Fetch answered without the partition asked for") }
        return found
    }
}
