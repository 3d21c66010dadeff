import NIOCore

/// A fetch waiting for data: answered as soon as a record reaches one of its partitions, or
/// when its wait is over (librdkafka's mock holds it for the whole wait either way).
final class FetchWait {
    let header: RequestHeader
    let request: FetchRequest
    let connection: any BrokerConnection
    var timer: Scheduled<Void>?
    var partitions: [BrokerPartition] = []
    var done = false

    init(header: RequestHeader, request: FetchRequest, connection: any BrokerConnection) {
        self.header = header
        self.request = request
        self.connection = connection
    }
}

struct FetchRequest {
    struct Partition {
        var index: Int32
        var offset: Int64
        var maxBytes: Int32
    }
    var maxWaitMilliseconds: Int32
    var minBytes: Int32
    var maxBytes: Int32
    var topics: [(name: String, partitions: [Partition])]
}

extension BrokerCore {
    // MARK: Produce

    func produce(_ header: RequestHeader, _ reader: inout KafkaReader) throws -> BrokerReply {
        _ = try reader.nullableString()  // transactional id
        let acks = try reader.int16()
        _ = try reader.int32()  // timeout
        // A fault for every topic is taken by this request; one for a topic, by a request with
        // records for it.
        var injected: Int16?
        if let fault = produceErrors.first, fault.topic == nil {
            injected = produceErrors.removeFirst().code
        }
        var out = newBody()
        let topicCount = try reader.int32()
        guard topicCount >= 0, Int(topicCount) <= reader.buffer.readableBytes else { throw KafkaWireError("bad topic count") }
        out.writeKafka(topicCount)
        for _ in 0..<topicCount {
            let name = try reader.string()
            out.writeKafkaString(name)
            var topicInjected = injected
            if topicInjected == nil, let fault = produceErrors.first, fault.topic == name {
                topicInjected = produceErrors.removeFirst().code
            }
            let partitionCount = try reader.int32()
            guard partitionCount >= 0, Int(partitionCount) <= reader.buffer.readableBytes else { throw KafkaWireError("bad partition count") }
            out.writeKafka(partitionCount)
            for _ in 0..<partitionCount {
                let index = try reader.int32()
                let records = try reader.nullableBytes()
                var error = KafkaErrorCode.none.rawValue
                var baseOffset: Int64 = -1
                if let topicInjected {
                    error = topicInjected
                } else if let partition = partition(name, index) {
                    (error, baseOffset) = append(records, to: partition, version: header.version)
                } else {
                    error = KafkaErrorCode.unknownTopicOrPartition.rawValue
                }
                out.writeKafka(index)
                out.writeKafka(error)
                out.writeKafka(baseOffset)
                if header.version >= 2 { out.writeKafka(Int64(-1)) }  // log append time: create time is used
                if header.version >= 5 { out.writeKafka(partition(name, index)?.log.startOffset ?? -1) }
            }
        }
        if header.version >= 1 { out.writeKafka(Int32(0)) }
        return acks == 0 ? .none : .now(out)
    }

    /// Appends every batch of one partition's records; returns the error code and the first
    /// batch's offset. A retried batch of an idempotent producer answers with its first offset.
    /// As Kafka does, it refuses a batch over `maxBatchBytes` (MESSAGE_TOO_LARGE) and, from
    /// Produce v3 on, more than one batch for a partition (INVALID_RECORD).
    private func append(_ records: ByteBuffer?, to partition: BrokerPartition, version: Int16) -> (Int16, Int64) {
        guard var records, records.readableBytes > 0 else { return (KafkaErrorCode.corruptMessage.rawValue, -1) }
        var parsed: [(ByteBuffer, RecordBatchHeader)] = []
        while records.readableBytes > 0 {
            guard let (header, length) = try? RecordBatchHeader.parse(records), let batch = records.readSlice(length: length) else {
                return (KafkaErrorCode.corruptMessage.rawValue, -1)
            }
            parsed.append((batch, header))
        }
        if version >= 3, parsed.count > 1 { return (KafkaErrorCode.invalidRecord.rawValue, -1) }
        if parsed.contains(where: { $0.0.readableBytes > maxBatchBytes }) { return (KafkaErrorCode.messageTooLarge.rawValue, -1) }
        var first: Int64 = -1
        for (batch, header) in parsed {
            switch checkSequence(header, on: partition) {
            case .duplicate(let offset):
                if first < 0 { first = offset }
                continue
            case .rejected(let code):
                return (code.rawValue, -1)
            case .append:
                break
            }
            let offset = partition.log.append(batch, header: header)
            if first < 0 { first = offset }
            if header.producerId >= 0 { recordSequence(header, offset: offset, on: partition) }
        }
        if !partition.waiters.isEmpty { wakeFetches(of: partition) }
        return (KafkaErrorCode.none.rawValue, first)
    }

    private enum SequenceCheck {
        case append
        case duplicate(Int64)
        case rejected(KafkaErrorCode)
    }

    private func checkSequence(_ header: RecordBatchHeader, on partition: BrokerPartition) -> SequenceCheck {
        guard header.producerId >= 0, let state = partition.producers[header.producerId] else { return .append }
        if header.producerEpoch != state.epoch {
            return header.producerEpoch > state.epoch && header.baseSequence == 0 ? .append : .rejected(.invalidProducerEpoch)
        }
        if let earlier = state.recent.first(where: { $0.firstSequence == header.baseSequence }) { return .duplicate(earlier.baseOffset) }
        return header.baseSequence == state.lastSequence &+ 1 ? .append : .rejected(.outOfOrderSequenceNumber)
    }

    private func recordSequence(_ header: RecordBatchHeader, offset: Int64, on partition: BrokerPartition) {
        let last = header.baseSequence &+ header.lastOffsetDelta
        var state = partition.producers[header.producerId] ?? ProducerSequence(epoch: header.producerEpoch, lastSequence: -1, recent: [])
        if state.epoch != header.producerEpoch { state = ProducerSequence(epoch: header.producerEpoch, lastSequence: -1, recent: []) }
        state.lastSequence = last
        state.recent.append((header.baseSequence, last, offset))
        if state.recent.count > 5 { state.recent.removeFirst() }  // Kafka keeps five, as many as a producer has in flight
        partition.producers[header.producerId] = state
    }

    // MARK: Fetch

    func fetch(_ header: RequestHeader, _ reader: inout KafkaReader, connection: any BrokerConnection) throws -> BrokerReply {
        _ = try reader.int32()  // replica id
        let maxWait = try reader.int32()
        let minBytes = try reader.int32()
        let maxBytes = try reader.int32()
        _ = try reader.int8()  // isolation level: nothing is transactional
        let topics = try reader.array { r -> (name: String, partitions: [FetchRequest.Partition]) in
            let name = try r.string()
            let partitions = try r.array { r -> FetchRequest.Partition in
                let index = try r.int32()
                let offset = try r.int64()
                if header.version >= 5 { _ = try r.int64() }  // the follower's log start
                return FetchRequest.Partition(index: index, offset: offset, maxBytes: try r.int32())
            }
            return (name, partitions ?? [])
        }
        let request = FetchRequest(maxWaitMilliseconds: maxWait, minBytes: minBytes, maxBytes: maxBytes, topics: topics ?? [])
        if maxWait <= 0 || hasAnswer(request) { return .now(fetchResponse(header, request)) }
        let wait = FetchWait(header: header, request: request, connection: connection)
        let key = ObjectIdentifier(wait)
        for topic in request.topics {
            for p in topic.partitions {
                guard let partition = partition(topic.name, p.index) else { continue }
                partition.waiters[key] = wait
                wait.partitions.append(partition)
            }
        }
        wait.timer = eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(maxWait))) { [self] in
            self.finish(wait)
        }
        return .later
    }

    /// Whether a fetch is answered now: `min_bytes` of data (librdkafka asks for 1), or an
    /// error for a partition (unknown, or an offset outside its log).
    private func hasAnswer(_ request: FetchRequest) -> Bool {
        var available = 0
        for topic in request.topics {
            for p in topic.partitions {
                guard let partition = partition(topic.name, p.index) else { return true }
                let log = partition.log
                if p.offset < log.startOffset || p.offset > log.endOffset { return true }
                available += min(log.availableBytes(from: p.offset), Int(max(p.maxBytes, 0)))
            }
        }
        return available > 0 && available >= Int(request.minBytes)
    }

    private func wakeFetches(of partition: BrokerPartition) {
        let waiting = partition.waiters.values
        for wait in waiting where hasAnswer(wait.request) { finish(wait) }
    }

    private func finish(_ wait: FetchWait) {
        guard !wait.done else { return }
        wait.done = true
        let key = ObjectIdentifier(wait)
        for partition in wait.partitions { partition.waiters[key] = nil }
        wait.partitions = []
        wait.timer?.cancel()
        wait.timer = nil
        guard !wait.connection.isClosed else { return }
        wait.connection.complete(correlationId: wait.header.correlationId, body: fetchResponse(wait.header, wait.request))
    }

    private func fetchResponse(_ header: RequestHeader, _ request: FetchRequest) -> ByteBuffer {
        var out = newBody()
        out.writeKafka(Int32(0))  // throttle time
        // As Kafka: at most its `fetch.max.bytes` in all, whatever the request asks, and the first
        // partition within that too (only a first batch may go over). Without the cap, one
        // partition listed many times made an answer past an int32 frame size.
        var budget = min(Int(max(request.maxBytes, 0)), Self.maxFetchBytes)
        var anyWritten = false
        out.writeKafkaArray(request.topics) { out, topic in
            out.writeKafkaString(topic.name)
            out.writeKafkaArray(topic.partitions) { out, p in
                out.writeKafka(p.index)
                guard let partition = self.partition(topic.name, p.index) else {
                    out.writeKafka(KafkaErrorCode.unknownTopicOrPartition.rawValue)
                    Self.writeEmptyPartition(&out, header, highWatermark: -1, logStart: -1)
                    return
                }
                let log = partition.log
                let inRange = p.offset >= log.startOffset && p.offset <= log.endOffset
                out.writeKafka((inRange ? KafkaErrorCode.none : .offsetOutOfRange).rawValue)
                out.writeKafka(log.endOffset)  // high watermark
                out.writeKafka(log.endOffset)  // last stable offset
                if header.version >= 5 { out.writeKafka(log.startOffset) }
                out.writeKafka(Int32(0))  // aborted transactions
                let lengthIndex = out.writerIndex
                out.writeKafka(Int32(0))
                guard inRange, p.offset < log.endOffset, budget > 0 || !anyWritten else { return }
                let limit = min(Int(max(p.maxBytes, 0)), budget)
                let written = log.read(from: p.offset, maxBytes: limit, into: &out)
                out.setInteger(Int32(written), at: lengthIndex, endianness: .big)
                budget -= written
                if written > 0 { anyWritten = true }
            }
        }
        return out
    }

    private static func writeEmptyPartition(_ out: inout ByteBuffer, _ header: RequestHeader, highWatermark: Int64, logStart: Int64) {
        out.writeKafka(highWatermark)
        out.writeKafka(highWatermark)
        if header.version >= 5 { out.writeKafka(logStart) }
        out.writeKafka(Int32(0))
        out.writeKafka(Int32(0))
    }

    // MARK: ListOffsets

    func listOffsets(_ header: RequestHeader, _ reader: inout KafkaReader) throws -> ByteBuffer {
        _ = try reader.int32()  // replica id
        if header.version >= 2 { _ = try reader.int8() }
        let topics = try reader.array { r -> (String, [(Int32, Int64)]) in
            let name = try r.string()
            let partitions = try r.array { r in (try r.int32(), try r.int64()) }
            return (name, partitions ?? [])
        }
        var out = newBody()
        if header.version >= 2 { out.writeKafka(Int32(0)) }
        out.writeKafkaArray(topics ?? []) { out, topic in
            out.writeKafkaString(topic.0)
            out.writeKafkaArray(topic.1) { out, p in
                out.writeKafka(p.0)
                guard let partition = self.partition(topic.0, p.0) else {
                    out.writeKafka(KafkaErrorCode.unknownTopicOrPartition.rawValue)
                    out.writeKafka(Int64(-1))
                    out.writeKafka(Int64(-1))
                    return
                }
                out.writeKafka(KafkaErrorCode.none.rawValue)
                switch p.1 {
                case -1:
                    out.writeKafka(Int64(-1))
                    out.writeKafka(partition.log.endOffset)
                case -2:
                    out.writeKafka(Int64(-1))
                    out.writeKafka(partition.log.startOffset)
                default:
                    let found = partition.log.offset(forTimestamp: p.1)
                    out.writeKafka(found?.timestamp ?? -1)
                    out.writeKafka(found?.offset ?? -1)
                }
            }
        }
        return out
    }
}
