import CRdKafka
import NIOCore

/// The requests the suite's own Kafka clients make (the partition reader's Metadata, ListOffsets
/// and Fetch, the record writer's Produce), at versions every broker they meet serves: the
/// suite's embedded broker (Produce 3–5, Fetch 4–5, ListOffsets 1–2, Metadata 0–4), librdkafka's
/// mock cluster, and Apache Kafka 3.x and 4.x (whose oldest are Produce 3, Fetch 4, ListOffsets 1,
/// Metadata 0).
enum KafkaClientMessages {
    static let metadataVersion: Int16 = 1
    static let produceVersion: Int16 = 3
    static let listOffsetsVersion: Int16 = 1
    static let fetchVersion: Int16 = 4

    // MARK: Metadata v1

    static func metadataRequest(topic: String) -> ByteBuffer {
        metadataRequest(topics: [topic])
    }

    static func metadataRequest(topics: some Collection<String>) -> ByteBuffer {
        var out = ByteBuffer()
        out.writeKafkaArray(topics) { $0.writeKafkaString($1) }
        return out
    }

    /// A Metadata v1 answer: the brokers' addresses and each topic's partitions with their leaders.
    struct ClusterMetadata {
        var brokers: [Int32: KafkaBrokerAddress]
        /// Per topic: its error, and per partition its error and leader (-1: none yet).
        var topics: [String: (error: Int16, partitions: [Int32: (error: Int16, leader: Int32)])]

        init(_ answer: ByteBuffer) throws {
            var reader = KafkaReader(answer)
            var brokers: [Int32: KafkaBrokerAddress] = [:]
            _ = try reader.array { r -> Void in
                let node = try r.int32()
                let host = try r.string()
                let port = try r.int32()
                _ = try r.nullableString()  // rack
                brokers[node] = KafkaBrokerAddress(host: host, port: Int(port))
            }
            _ = try reader.int32()  // controller
            var topics: [String: (error: Int16, partitions: [Int32: (error: Int16, leader: Int32)])] = [:]
            _ = try reader.array { r -> Void in
                let error = try r.int16()
                let name = try r.string()
                _ = try r.int8()  // is_internal
                var partitions: [Int32: (error: Int16, leader: Int32)] = [:]
                _ = try r.array { p -> Void in
                    let error = try p.int16()
                    let index = try p.int32()
                    let leader = try p.int32()
                    _ = try p.array { try $0.int32() }  // replicas
                    _ = try p.array { try $0.int32() }  // in-sync replicas
                    partitions[index] = (error, leader)
                }
                topics[name] = (error, partitions)
            }
            self.brokers = brokers
            self.topics = topics
        }

        /// Where a partition's leader is: its address, or the error that keeps it from being
        /// known (the topic or partition unknown, no leader elected yet).
        func leader(of topic: String, partition: Int32) -> Result<KafkaBrokerAddress, KafkaErrorCode> {
            guard let (topicError, partitions) = topics[topic] else { return .failure(.unknownTopicOrPartition) }
            guard topicError == 0 else { return .failure(KafkaErrorCode(rawValue: topicError)) }
            guard let (error, leader) = partitions[partition] else { return .failure(.unknownTopicOrPartition) }
            // A partition whose leader is not available yet answers -1 (with or without an error).
            guard leader >= 0, let address = brokers[leader] else {
                return .failure(error != 0 ? KafkaErrorCode(rawValue: error) : .leaderNotAvailable)
            }
            return .success(address)
        }
    }

    /// Where a partition's leader is, from a Metadata v1 answer (`ClusterMetadata.leader`).
    static func leader(of topic: String, partition: Int32, in answer: ByteBuffer) throws -> Result<KafkaBrokerAddress, KafkaErrorCode> {
        try ClusterMetadata(answer).leader(of: topic, partition: partition)
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
        fetchRequest(
            [(TopicPartition(topic: topic, partition: partition), offset, maxBytes)], maxWaitMilliseconds: maxWaitMilliseconds, minBytes: minBytes,
            maxBytes: maxBytes)
    }

    /// One Fetch for several partitions (each from its offset, up to its own byte limit), answered
    /// once `minBytes` are there or `maxWaitMilliseconds` passed, at most `maxBytes` in all.
    static func fetchRequest(
        _ partitions: [(partition: TopicPartition, offset: Int64, maxBytes: Int32)], maxWaitMilliseconds: Int32, minBytes: Int32, maxBytes: Int32
    ) -> ByteBuffer {
        fetchRequestAndOffsetPositions(partitions, maxWaitMilliseconds: maxWaitMilliseconds, minBytes: minBytes, maxBytes: maxBytes).body
    }

    /// Where a fetch request's wait and `min_bytes` sit in its body (after the replica id), for a
    /// caller that patches them per send.
    static let fetchMaxWaitAt = 4
    static let fetchMinBytesAt = 8

    /// `fetchRequest`, and where each partition's offset sits in the body (in the order given), for
    /// a caller that sends the same request again from other offsets. Partitions are sent grouped by
    /// topic, in the order each topic first appears.
    static func fetchRequestAndOffsetPositions(
        _ partitions: [(partition: TopicPartition, offset: Int64, maxBytes: Int32)], maxWaitMilliseconds: Int32, minBytes: Int32, maxBytes: Int32
    ) -> (body: ByteBuffer, offsetAt: [Int]) {
        var byTopic: [(String, [Int])] = []
        for (index, entry) in partitions.enumerated() {
            if let at = byTopic.firstIndex(where: { $0.0 == entry.partition.topic }) {
                byTopic[at].1.append(index)
            } else {
                byTopic.append((entry.partition.topic, [index]))
            }
        }
        var out = ByteBuffer()
        out.reserveCapacity(32 + byTopic.reduce(0) { $0 + $1.0.utf8.count + 6 } + partitions.count * 16)
        out.writeKafka(Int32(-1))  // replica id: a client
        out.writeKafka(maxWaitMilliseconds)
        out.writeKafka(minBytes)
        out.writeKafka(maxBytes)
        out.writeKafka(Int8(0))  // read uncommitted: the suite's producers are idempotent, not transactional
        out.writeKafka(Int32(byTopic.count))
        var offsetAt = [Int](repeating: 0, count: partitions.count)
        for (topic, indices) in byTopic {
            out.writeKafkaString(topic)
            out.writeKafka(Int32(indices.count))
            for index in indices {
                out.writeKafka(partitions[index].partition.partition)
                offsetAt[index] = out.writerIndex
                out.writeKafka(partitions[index].offset)
                out.writeKafka(partitions[index].maxBytes)
            }
        }
        return (out, offsetAt)
    }

    /// One partition's part of a Fetch v4 answer.
    struct FetchedPartition {
        var error: Int16
        var highWatermark: Int64
        /// The record batches (nil or empty: none), the last one possibly cut short.
        var records: ByteBuffer?
    }

    static func fetchedPartition(_ topic: String, _ partition: Int32, in answer: ByteBuffer) throws -> FetchedPartition {
        let asked = TopicPartition(topic: topic, partition: partition)
        guard let found = try fetchedPartitions(in: answer, expecting: [asked]).first(where: { $0.0 == 0 }) else {
            throw KafkaWireError("Fetch answered without the partition asked for")
        }
        return found.1
    }

    /// The partitions of a Fetch v4 answer, each with its index in `expected` (nil: not asked
    /// for). A broker answers in the order asked, so each is matched against the next expected
    /// one first, and looked for among all of them only if that is not it.
    static func fetchedPartitions(in answer: ByteBuffer, expecting expected: [TopicPartition]) throws -> [(Int?, FetchedPartition)] {
        var reader = KafkaReader(answer)
        _ = try reader.int32()  // throttle time
        var found: [(Int?, FetchedPartition)] = []
        found.reserveCapacity(expected.count)
        var next = 0
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
                let at: Int?
                if next < expected.count, expected[next].partition == index, expected[next].topic == name {
                    at = next
                } else {
                    at = expected.firstIndex { $0.partition == index && $0.topic == name }
                }
                if let at { next = at + 1 }
                found.append((at, FetchedPartition(error: error, highWatermark: highWatermark, records: records)))
            }
        }
        return found
    }

}

extension KafkaClientMessages {
    // MARK: Produce v3

    /// One request for every partition's records on one broker, acknowledged by all in-sync
    /// replicas (acks=-1) within `timeoutMilliseconds`: per partition an uncompressed batch.
    static func produceRequest(
        _ partitions: [(topic: String, partition: Int32, messages: ArraySlice<KafkaProducerMessage>)], timeoutMilliseconds: Int32,
        timestampMilliseconds: Int64
    ) -> ByteBuffer {
        var byTopic: [(String, [(Int32, ArraySlice<KafkaProducerMessage>)])] = []
        for entry in partitions {
            if let index = byTopic.firstIndex(where: { $0.0 == entry.topic }) {
                byTopic[index].1.append((entry.partition, entry.messages))
            } else {
                byTopic.append((entry.topic, [(entry.partition, entry.messages)]))
            }
        }
        var out = ByteBuffer()
        out.reserveCapacity(partitions.reduce(64) { $0 + $1.messages.reduce(80) { $0 + ($1.value?.count ?? 0) + 64 } })
        out.writeKafkaString(nil)  // transactional id
        out.writeKafka(Int16(-1))  // acks: all in-sync replicas
        out.writeKafka(timeoutMilliseconds)
        out.writeKafka(Int32(byTopic.count))
        for (topic, topicPartitions) in byTopic {
            out.writeKafkaString(topic)
            out.writeKafka(Int32(topicPartitions.count))
            for (partition, messages) in topicPartitions {
                out.writeKafka(partition)
                let sizeAt = out.writerIndex
                out.writeKafka(Int32(0))  // the batch's size, set below
                RecordBatchEncoder.write(messages, timestampMilliseconds: timestampMilliseconds, to: &out)
                out.setInteger(Int32(out.writerIndex - sizeAt - 4), at: sizeAt, endianness: .big)
            }
        }
        return out
    }

    /// A Produce v3 answer: per topic and partition, its error code and the first record's offset.
    static func produced(in answer: ByteBuffer) throws -> [TopicPartition: (error: Int16, baseOffset: Int64)] {
        var reader = KafkaReader(answer)
        var result: [TopicPartition: (error: Int16, baseOffset: Int64)] = [:]
        _ = try reader.array { r -> Void in
            let name = try r.string()
            _ = try r.array { p -> Void in
                let index = try p.int32()
                let error = try p.int16()
                let baseOffset = try p.int64()
                _ = try p.int64()  // log append time
                result[TopicPartition(topic: name, partition: index)] = (error, baseOffset)
            }
        }
        _ = try reader.int32()  // throttle time
        return result
    }
}
