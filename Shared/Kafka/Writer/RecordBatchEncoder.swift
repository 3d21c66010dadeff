import NIOCore

/// Writes records as one uncompressed record batch (message format v2), as a producer without
/// idempotence sends it: base offset 0 (the broker assigns offsets), no producer id, the
/// records' create time "now", their keys, values and headers as given.
enum RecordBatchEncoder {
    /// Appends the batch of `messages` (at least one) to `out`, stamped with `timestampMilliseconds`.
    static func write(_ messages: some Collection<KafkaProducerMessage>, timestampMilliseconds: Int64, to out: inout ByteBuffer) {
        let start = out.writerIndex
        out.writeKafka(Int64(0))  // base offset
        out.writeKafka(Int32(0))  // batch length, set below
        out.writeKafka(Int32(-1))  // partition leader epoch: a producer's
        out.writeKafka(Int8(2))  // magic
        out.writeKafka(Int32(0))  // CRC-32C of everything after it, set below
        let checked = out.writerIndex
        out.writeKafka(Int16(0))  // attributes: no compression, create time, not transactional
        out.writeKafka(Int32(messages.count - 1))  // last offset delta
        out.writeKafka(timestampMilliseconds)  // first timestamp
        out.writeKafka(timestampMilliseconds)  // max timestamp
        out.writeKafka(Int64(-1))  // producer id: none
        out.writeKafka(Int16(-1))  // producer epoch
        out.writeKafka(Int32(-1))  // base sequence
        out.writeKafka(Int32(messages.count))
        for (delta, message) in messages.enumerated() { writeRecord(message, offsetDelta: delta, to: &out) }
        out.setInteger(Int32(out.writerIndex - start - 12), at: start + 8, endianness: .big)
        let crc = out.withUnsafeReadableBytes { bytes in
            CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[(checked - out.readerIndex)...]))
        }
        out.setInteger(crc, at: checked - 4, endianness: .big)
    }

    /// A batch's bytes before its records.
    static let headerSize = 61

    /// The bytes `message` takes in a batch as its `offsetDelta`th record, its length included.
    static func recordSize(_ message: KafkaProducerMessage, offsetDelta: Int) -> Int {
        let body = bodySize(message, offsetDelta: offsetDelta)
        return varintSize(Int64(body)) + body
    }

    /// `indices` (records of one partition, in order) cut into runs whose batch stays within
    /// `maxBytes`, as a broker's `message.max.bytes` demands; a record larger than that on its own.
    static func batches(_ indices: [Int], of messages: [KafkaProducerMessage], maxBytes: Int) -> [[Int]] {
        var batches: [[Int]] = []
        var current: [Int] = []
        var size = headerSize
        for index in indices {
            if !current.isEmpty, size + recordSize(messages[index], offsetDelta: current.count) > maxBytes {
                batches.append(current)
                current = []
                size = headerSize
            }
            size += recordSize(messages[index], offsetDelta: current.count)
            current.append(index)
        }
        if !current.isEmpty { batches.append(current) }
        return batches
    }

    private static func bodySize(_ message: KafkaProducerMessage, offsetDelta: Int) -> Int {
        var size = 1 + varintSize(0) + varintSize(Int64(offsetDelta))  // attributes, timestamp delta, offset delta
        size += fieldSize(message.key) + fieldSize(message.value) + varintSize(Int64(message.headers.count))
        for header in message.headers { size += varintSize(Int64(header.key.utf8.count)) + header.key.utf8.count + fieldSize(header.value) }
        return size
    }

    private static func writeRecord(_ message: KafkaProducerMessage, offsetDelta: Int, to out: inout ByteBuffer) {
        out.writeVarint(Int64(bodySize(message, offsetDelta: offsetDelta)))
        out.writeKafka(Int8(0))  // attributes
        out.writeVarint(0)  // timestamp delta
        out.writeVarint(Int64(offsetDelta))
        out.writeVarintField(message.key)
        out.writeVarintField(message.value)
        out.writeVarint(Int64(message.headers.count))
        for header in message.headers {
            out.writeVarint(Int64(header.key.utf8.count))
            out.writeString(header.key)
            out.writeVarintField(header.value)
        }
    }

    /// The bytes of a zig-zag varint.
    static func varintSize(_ value: Int64) -> Int {
        var zigzag = UInt64(bitPattern: (value << 1) ^ (value >> 63))
        var size = 1
        while zigzag >= 0x80 {
            zigzag >>= 7
            size += 1
        }
        return size
    }

    private static func fieldSize(_ bytes: [UInt8]?) -> Int {
        guard let bytes else { return varintSize(-1) }
        return varintSize(Int64(bytes.count)) + bytes.count
    }
}

extension ByteBuffer {
    /// A zig-zag varint, as a record's fields are written.
    mutating func writeVarint(_ value: Int64) {
        var zigzag = UInt64(bitPattern: (value << 1) ^ (value >> 63))
        while zigzag >= 0x80 {
            writeInteger(UInt8(truncatingIfNeeded: zigzag) | 0x80)
            zigzag >>= 7
        }
        writeInteger(UInt8(zigzag))
    }

    /// A varint-length-prefixed field; -1 for null.
    mutating func writeVarintField(_ bytes: [UInt8]?) {
        guard let bytes else { return writeVarint(-1) }
        writeVarint(Int64(bytes.count))
        writeBytes(bytes)
    }
}
