import NIOCore

/// The records of the batches one fetch returned (v2 record batches, magic 2), from the offset
/// asked for on: a batch may start before it (a broker answers from the batch that holds it).
struct FetchedRecords {
    var messages: [KafkaConsumerMessage] = []
    /// The offset to fetch next: after the last whole batch read.
    var nextOffset: Int64
    /// A batch this reader cannot read (compressed other than with lz4, or an older message
    /// format, or an lz4 frame that does not decode) starts at this
    /// offset; everything before it is in `messages`.
    var unreadableAt: Int64?
    /// The answer held only part of its first batch: the fetch must ask for more bytes.
    var firstBatchCutShort = false

    /// Decodes `records`, the partition's part of a fetch answer for `offset`. A batch cut
    /// short at the end (the answer's byte limit) is left for the next fetch; a batch whose
    /// lengths contradict each other throws.
    init(_ records: ByteBuffer, topic: String, partition: Int32, from offset: Int64) throws {
        nextOffset = offset
        var bytes = records
        var first = true
        while bytes.readableBytes >= 17 {
            let start = bytes.readerIndex
            guard let baseOffset = bytes.getInteger(at: start, endianness: .big, as: Int64.self),
                let batchLength = bytes.getInteger(at: start + 8, endianness: .big, as: Int32.self),
                let magic = bytes.getInteger(at: start + 16, as: Int8.self)
            else { break }
            guard Int(batchLength) + 12 <= bytes.readableBytes else {
                firstBatchCutShort = first
                break
            }
            guard magic == 2 else {
                unreadableAt = max(offset, baseOffset)
                return
            }
            let (header, total) = try RecordBatchHeader.parse(bytes)
            // A broker's offsets are never negative, and the batch's last must fit: anything else
            // is not a Kafka answer (and would overflow below).
            guard baseOffset >= 0, baseOffset < Int64.max - Int64(header.lastOffsetDelta) else {
                throw KafkaWireError("record batch base offset \(baseOffset) out of range")
            }
            let batchEnd = baseOffset + Int64(header.lastOffsetDelta) + 1
            defer {
                bytes.moveReaderIndex(forwardBy: total)
                first = false
            }
            guard batchEnd > nextOffset else { continue }  // wholly before the offset asked for
            if header.isControl {
                nextOffset = batchEnd
                continue
            }
            var batch = bytes.getSlice(at: start, length: total) ?? ByteBuffer()
            if header.compressed {
                // lz4 (the suite's default) is decoded here; another codec, or an lz4 frame that
                // does not decode, is librdkafka's to read.
                guard let decoded = Self.decompressed(batch, header) else {
                    unreadableAt = max(nextOffset, baseOffset)
                    return
                }
                batch = decoded
            }
            let batchBytes = batch.readableBytes
            var reader = RecordReader(bytes: batch, position: RecordBatchHeader.size)
            var previousDelta: Int64 = -1
            for _ in 0..<header.recordCount {
                let message = try Self.record(
                    &reader, batchEnd: batchBytes, baseOffset: baseOffset, after: previousDelta, last: header.lastOffsetDelta,
                    baseTimestamp: header.baseTimestamp, topic: topic, partition: partition)
                previousDelta = message.offset - baseOffset
                if message.offset >= nextOffset { messages.append(message) }
            }
            nextOffset = batchEnd
        }
    }

    /// The most bytes one batch's records may decompress to.
    static let maxDecompressedBytes = 64 << 20

    /// `batch` with its records decompressed (lz4 only): the header, then the records as an
    /// uncompressed batch holds them. Nil for another codec or a frame that does not decode.
    private static func decompressed(_ batch: ByteBuffer, _ header: RecordBatchHeader) -> ByteBuffer? {
        guard header.codec == 3, let records = batch.getSlice(at: RecordBatchHeader.size, length: batch.readableBytes - RecordBatchHeader.size),
            let decoded = try? LZ4Frame.decode(records, limit: maxDecompressedBytes),
            var whole = batch.getSlice(at: 0, length: RecordBatchHeader.size)
        else { return nil }
        whole.writeImmutableBuffer(decoded)
        return whole
    }

    /// The next record of a batch; its offset delta must come after `after` (the previous
    /// record's) and be at most `last` (the batch's last), its timestamp must fit.
    private static func record(
        _ reader: inout RecordReader, batchEnd: Int, baseOffset: Int64, after: Int64, last: Int32, baseTimestamp: Int64, topic: String,
        partition: Int32
    ) throws -> KafkaConsumerMessage {
        guard let length = reader.varint(), length >= 0, length <= Int64(batchEnd - reader.position) else {
            throw KafkaWireError("record length beyond its batch")
        }
        let end = reader.position + Int(length)
        guard reader.byte() != nil, let timestampDelta = reader.varint(), let offsetDelta = reader.varint() else {
            throw KafkaWireError("truncated record")
        }
        guard offsetDelta > after, offsetDelta <= Int64(last) else {
            throw KafkaWireError("record offset delta \(offsetDelta) out of order or beyond its batch's last")
        }
        let (timestamp, overflow) = baseTimestamp.addingReportingOverflow(timestampDelta)
        guard !overflow else { throw KafkaWireError("record timestamp out of range") }
        let key = try reader.lengthPrefixed()
        let value = try reader.lengthPrefixed()
        guard let headerCount = reader.varint(), headerCount >= 0, headerCount <= Int64(end - reader.position) else {
            throw KafkaWireError("record header count beyond its record")
        }
        var headers: [KafkaHeader] = []
        headers.reserveCapacity(Int(headerCount))
        for _ in 0..<headerCount {
            guard let name = try reader.lengthPrefixed() else { throw KafkaWireError("a record header without a name") }
            headers.append(KafkaHeader(key: String(decoding: name, as: UTF8.self), value: try reader.lengthPrefixed()))
        }
        guard reader.position <= end else { throw KafkaWireError("record fields beyond its length") }
        reader.position = end
        return KafkaConsumerMessage(
            topic: topic, partition: partition, offset: baseOffset + offsetDelta, key: key, value: value, headers: headers,
            timestampMilliseconds: timestamp)
    }
}
