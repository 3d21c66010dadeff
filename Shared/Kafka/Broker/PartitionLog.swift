import NIOCore

/// The header fields of a v2 record batch (magic 2) the broker needs: where its offsets end,
/// its timestamps and its producer's idempotence sequence.
struct RecordBatchHeader {
    static let size = 61
    var lastOffsetDelta: Int32
    var maxTimestamp: Int64
    var compressed: Bool { codec != 0 }
    /// The compression codec (attributes' low 3 bits): 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
    var codec: Int16
    /// A transaction marker's batch: no application records.
    var isControl: Bool
    var baseTimestamp: Int64
    var producerId: Int64
    var producerEpoch: Int16
    var baseSequence: Int32
    var recordCount: Int32

    /// Parses the batch at the reader index of `bytes`; returns it and its whole length.
    static func parse(_ bytes: ByteBuffer) throws -> (RecordBatchHeader, Int) {
        let start = bytes.readerIndex
        guard bytes.readableBytes >= size,
            let batchLength = bytes.getInteger(at: start + 8, endianness: .big, as: Int32.self),
            let magic = bytes.getInteger(at: start + 16, as: Int8.self),
            let attributes = bytes.getInteger(at: start + 21, endianness: .big, as: Int16.self),
            let lastOffsetDelta = bytes.getInteger(at: start + 23, endianness: .big, as: Int32.self),
            let baseTimestamp = bytes.getInteger(at: start + 27, endianness: .big, as: Int64.self),
            let maxTimestamp = bytes.getInteger(at: start + 35, endianness: .big, as: Int64.self),
            let producerId = bytes.getInteger(at: start + 43, endianness: .big, as: Int64.self),
            let producerEpoch = bytes.getInteger(at: start + 51, endianness: .big, as: Int16.self),
            let baseSequence = bytes.getInteger(at: start + 53, endianness: .big, as: Int32.self),
            let recordCount = bytes.getInteger(at: start + 57, endianness: .big, as: Int32.self)
        else { throw KafkaWireError("truncated record batch") }
        guard magic == 2 else { throw KafkaWireError("record batch magic \(magic), only 2 is served") }
        let total = Int(batchLength) + 12
        guard batchLength >= size - 12, total <= bytes.readableBytes else { throw KafkaWireError("record batch length \(batchLength) beyond the request") }
        guard lastOffsetDelta >= 0, recordCount >= 0, Int64(recordCount) <= Int64(lastOffsetDelta) + 1 else {
            throw KafkaWireError("record batch offsets inconsistent")
        }
        let header = RecordBatchHeader(
            lastOffsetDelta: lastOffsetDelta, maxTimestamp: maxTimestamp, codec: attributes & 0x07, isControl: attributes & 0x20 != 0,
            baseTimestamp: baseTimestamp, producerId: producerId,
            producerEpoch: producerEpoch, baseSequence: baseSequence, recordCount: recordCount)
        return (header, total)
    }
}

/// One stored batch: its bytes (base offset already rewritten) and where it sits in the log.
struct StoredBatch {
    var baseOffset: Int64
    var lastOffset: Int64
    var maxTimestamp: Int64
    var bytes: ByteBuffer
    /// Bytes appended to the partition before this batch (for a fetch's `min_bytes`).
    var bytesBefore: Int
}

/// A partition's log in memory: batches in offset order, found by binary search (librdkafka's
/// mock walks its list from the oldest on every fetch), and trimmed from the oldest once it
/// holds more than `retentionBytes`.
struct PartitionLog {
    private(set) var batches: [StoredBatch] = []
    /// Index of the oldest batch still held (trimmed batches are removed in chunks).
    private var head = 0
    private(set) var startOffset: Int64 = 0
    private(set) var endOffset: Int64 = 0
    private(set) var sizeBytes = 0
    /// Every byte ever appended, trimmed or not.
    private(set) var appendedBytes = 0
    let retentionBytes: Int

    init(retentionBytes: Int) { self.retentionBytes = retentionBytes }

    /// Appends one batch, rewriting its base offset; returns that offset.
    mutating func append(_ batch: ByteBuffer, header: RecordBatchHeader) -> Int64 {
        var bytes = batch
        let base = endOffset
        bytes.setInteger(base, at: bytes.readerIndex, endianness: .big)
        let last = base + Int64(header.lastOffsetDelta)
        batches.append(StoredBatch(baseOffset: base, lastOffset: last, maxTimestamp: header.maxTimestamp, bytes: bytes, bytesBefore: appendedBytes))
        endOffset = last + 1
        sizeBytes += bytes.readableBytes
        appendedBytes += bytes.readableBytes
        trim()
        return base
    }

    private mutating func trim() {
        while sizeBytes > retentionBytes, batches.count - head > 1 {
            sizeBytes -= batches[head].bytes.readableBytes
            head += 1
            startOffset = batches[head].baseOffset
        }
        if head > 1024, head * 2 > batches.count {
            batches.removeFirst(head)
            head = 0
        }
    }

    /// The index of the batch holding `offset` (start ≤ offset < end).
    private func index(of offset: Int64) -> Int? {
        guard offset >= startOffset, offset < endOffset else { return nil }
        var low = head
        var high = batches.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if batches[mid].baseOffset <= offset { low = mid } else { high = mid - 1 }
        }
        return low
    }

    /// The bytes a fetch from `offset` would find (0 at the end or outside the log).
    func availableBytes(from offset: Int64) -> Int {
        guard let i = index(of: offset) else { return 0 }
        return appendedBytes - batches[i].bytesBefore
    }

    /// Batches from the one holding `offset`, at most `maxBytes` of them (always the first one
    /// whole, as Kafka serves an oversized first batch so that a consumer can progress).
    func read(from offset: Int64, maxBytes: Int, into out: inout ByteBuffer) -> Int {
        guard var i = index(of: offset) else { return 0 }
        var written = 0
        while i < batches.count {
            let size = batches[i].bytes.readableBytes
            if written > 0, written + size > maxBytes { break }
            var bytes = batches[i].bytes
            out.writeBuffer(&bytes)
            written += size
            i += 1
        }
        return written
    }

    /// The first offset whose record's timestamp is at least `timestamp`, and that timestamp;
    /// nil when no record is that late. Uncompressed batches are read record by record,
    /// compressed ones answer with their first offset.
    func offset(forTimestamp timestamp: Int64) -> (offset: Int64, timestamp: Int64)? {
        for i in head..<batches.count where batches[i].maxTimestamp >= timestamp {
            let batch = batches[i]
            if let exact = Self.firstRecord(in: batch, atLeast: timestamp) { return exact }
            return (batch.baseOffset, batch.maxTimestamp)
        }
        return nil
    }

    private static func firstRecord(in batch: StoredBatch, atLeast timestamp: Int64) -> (offset: Int64, timestamp: Int64)? {
        let bytes = batch.bytes
        let start = bytes.readerIndex
        guard let attributes = bytes.getInteger(at: start + 21, endianness: .big, as: Int16.self), attributes & 0x07 == 0,
            let firstTimestamp = bytes.getInteger(at: start + 27, endianness: .big, as: Int64.self),
            let count = bytes.getInteger(at: start + 57, endianness: .big, as: Int32.self)
        else { return nil }
        var reader = RecordReader(bytes: bytes, position: start + RecordBatchHeader.size)
        // A producer's batch is stored unread: its records may lie, and then answer nothing here.
        let lastDelta = batch.lastOffset - batch.baseOffset
        for _ in 0..<count {
            guard let length = reader.varint(), length >= 0, length <= Int64(bytes.writerIndex - reader.position) else { return nil }
            let body = reader.position
            guard reader.byte() != nil, let timestampDelta = reader.varint(), let offsetDelta = reader.varint(), (0...lastDelta).contains(offsetDelta)
            else { return nil }
            let (recordTimestamp, overflow) = firstTimestamp.addingReportingOverflow(timestampDelta)
            guard !overflow else { return nil }
            if recordTimestamp >= timestamp { return (batch.baseOffset + offsetDelta, recordTimestamp) }
            reader.position = body + Int(length)
        }
        return nil
    }
}

/// Walks the records of an uncompressed batch (zig-zag varints).
struct RecordReader {
    let bytes: ByteBuffer
    var position: Int

    mutating func byte() -> UInt8? {
        guard let b = bytes.getInteger(at: position, as: UInt8.self) else { return nil }
        position += 1
        return b
    }

    mutating func varint() -> Int64? {
        var raw: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard shift < 64, let b = byte() else { return nil }
            raw |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { break }
            shift += 7
        }
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    /// A varint-length-prefixed field: nil for a negative length (null), an error past the end.
    mutating func lengthPrefixed() throws -> [UInt8]? {
        guard let length = varint() else { throw KafkaWireError("truncated record") }
        if length < 0 { return nil }
        guard length <= bytes.writerIndex - position, let field = bytes.getBytes(at: position, length: Int(length)) else {
            throw KafkaWireError("record field beyond its batch")
        }
        position += Int(length)
        return field
    }
}
