import CRdKafka
import NIOCore

/// A request or record batch the broker cannot parse: the connection that sent it is closed.
struct KafkaWireError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Reads Kafka's primitive types (big-endian integers, int16-prefixed strings, int32-prefixed
/// bytes and arrays) from a request, throwing on truncation instead of trapping.
struct KafkaReader {
    var buffer: ByteBuffer

    init(_ buffer: ByteBuffer) { self.buffer = buffer }

    mutating func int8() throws -> Int8 { try read(Int8.self) }
    mutating func int16() throws -> Int16 { try read(Int16.self) }
    mutating func int32() throws -> Int32 { try read(Int32.self) }
    mutating func int64() throws -> Int64 { try read(Int64.self) }

    private mutating func read<T: FixedWidthInteger>(_: T.Type) throws -> T {
        guard let value = buffer.readInteger(endianness: .big, as: T.self) else { throw KafkaWireError("truncated request") }
        return value
    }

    mutating func string() throws -> String {
        guard let value = try nullableString() else { throw KafkaWireError("null where a string is required") }
        return value
    }

    mutating func nullableString() throws -> String? {
        let length = try int16()
        if length < 0 { return nil }
        guard let value = buffer.readString(length: Int(length)) else { throw KafkaWireError("truncated string") }
        return value
    }

    mutating func nullableBytes() throws -> ByteBuffer? {
        let length = try int32()
        if length < 0 { return nil }
        guard let value = buffer.readSlice(length: Int(length)) else { throw KafkaWireError("truncated bytes") }
        return value
    }

    /// An int32-counted array; a null array (-1) reads as nil. The count is checked against what
    /// is left, and room for at most 1 024 elements is reserved ahead, so a hostile count cannot
    /// make the broker reserve memory (a 100 MB request may count 100 million elements).
    mutating func array<T>(_ element: (inout KafkaReader) throws -> T) throws -> [T]? {
        let count = try int32()
        if count < 0 { return nil }
        guard Int(count) <= buffer.readableBytes else { throw KafkaWireError("array count beyond the request") }
        var result: [T] = []
        result.reserveCapacity(min(Int(count), 1_024))
        for _ in 0..<count { result.append(try element(&self)) }
        return result
    }

    mutating func unsignedVarint() throws -> UInt32 {
        var value: UInt32 = 0
        var shift: UInt32 = 0
        while true {
            let byte = try UInt8(bitPattern: int8())
            value |= UInt32(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
            if shift > 28 { throw KafkaWireError("varint too long") }
        }
    }

    /// Skips a flexible version's tagged fields.
    mutating func skipTaggedFields() throws {
        let count = try unsignedVarint()
        for _ in 0..<count {
            _ = try unsignedVarint()
            let size = try unsignedVarint()
            guard buffer.readableBytes >= Int(size) else { throw KafkaWireError("truncated tagged field") }
            buffer.moveReaderIndex(forwardBy: Int(size))
        }
    }
}

extension ByteBuffer {
    mutating func writeKafka(_ value: Int8) { writeInteger(value, endianness: .big) }
    mutating func writeKafka(_ value: Int16) { writeInteger(value, endianness: .big) }
    mutating func writeKafka(_ value: Int32) { writeInteger(value, endianness: .big) }
    mutating func writeKafka(_ value: Int64) { writeInteger(value, endianness: .big) }
    mutating func writeKafka(_ value: Bool) { writeInteger(value ? 1 : 0, as: Int8.self) }

    mutating func writeKafkaString(_ value: String?) {
        guard let value else {
            writeKafka(Int16(-1))
            return
        }
        let lengthIndex = writerIndex
        writeKafka(Int16(0))
        let written = writeString(value)
        setInteger(Int16(truncatingIfNeeded: written), at: lengthIndex, endianness: .big)
    }

    mutating func writeKafkaBytes(_ value: ByteBuffer?) {
        guard var value else {
            writeKafka(Int32(-1))
            return
        }
        writeKafka(Int32(value.readableBytes))
        writeBuffer(&value)
    }

    mutating func writeKafkaArray<C: Collection>(_ elements: C, _ write: (inout ByteBuffer, C.Element) -> Void) {
        writeKafka(Int32(elements.count))
        for element in elements { write(&self, element) }
    }

    mutating func writeUnsignedVarint(_ value: UInt32) {
        var v = value
        while v >= 0x80 {
            writeInteger(UInt8(v & 0x7F | 0x80))
            v >>= 7
        }
        writeInteger(UInt8(v))
    }
}

/// The error codes this broker answers with, and the partition reader meets in an answer:
/// Kafka's protocol numbers, taken from librdkafka's `rd_kafka_resp_err_t` (the client's own
/// table) rather than written out again.
struct KafkaErrorCode: Error, Equatable, CustomStringConvertible {
    let rawValue: Int16

    init(_ code: rd_kafka_resp_err_t) { rawValue = Int16(truncatingIfNeeded: code.rawValue) }
    init(rawValue: Int16) { self.rawValue = rawValue }

    var description: String { "\(String(cString: rd_kafka_err2name(rd_kafka_resp_err_t(rawValue: Int32(rawValue))))) (\(rawValue))" }

    static let none = KafkaErrorCode(RD_KAFKA_RESP_ERR_NO_ERROR)
    static let offsetOutOfRange = KafkaErrorCode(RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE)
    static let corruptMessage = KafkaErrorCode(RD_KAFKA_RESP_ERR_INVALID_MSG)
    static let messageTooLarge = KafkaErrorCode(RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE)
    static let invalidRecord = KafkaErrorCode(RD_KAFKA_RESP_ERR_INVALID_RECORD)
    static let unknownTopicOrPartition = KafkaErrorCode(RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
    static let leaderNotAvailable = KafkaErrorCode(RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE)
    static let illegalGeneration = KafkaErrorCode(RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION)
    static let inconsistentGroupProtocol = KafkaErrorCode(RD_KAFKA_RESP_ERR_INCONSISTENT_GROUP_PROTOCOL)
    static let invalidGroupId = KafkaErrorCode(RD_KAFKA_RESP_ERR_INVALID_GROUP_ID)
    static let unknownMemberId = KafkaErrorCode(RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID)
    static let invalidSessionTimeout = KafkaErrorCode(RD_KAFKA_RESP_ERR_INVALID_SESSION_TIMEOUT)
    static let rebalanceInProgress = KafkaErrorCode(RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS)
    static let unsupportedVersion = KafkaErrorCode(RD_KAFKA_RESP_ERR_UNSUPPORTED_VERSION)
    static let invalidRequest = KafkaErrorCode(RD_KAFKA_RESP_ERR_INVALID_REQUEST)
    static let offsetMetadataTooLarge = KafkaErrorCode(RD_KAFKA_RESP_ERR_OFFSET_METADATA_TOO_LARGE)
    static let outOfOrderSequenceNumber = KafkaErrorCode(RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER)
    static let invalidProducerEpoch = KafkaErrorCode(RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH)
}
