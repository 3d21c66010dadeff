import NIOCore
import Testing
import TestSupport

@testable import Kafka

/// Record batches that lie, as a broker gone wrong (or something that is not a broker) could send
/// them: `FetchedRecords`, the decoder behind chat-fanout's own fetch and the gateway's partition
/// reader, refuses them with an error and never traps on their numbers.
@Suite("Hostile record batches")
struct HostileRecordBatchTests {
    /// One record of `batch`: its deltas as written, and the length it claims (nil: its real one).
    struct Record {
        var timestampDelta: Int64 = 0
        var offsetDelta: Int64
        var claimedLength: Int64? = nil
    }

    /// An uncompressed v2 batch written field by field, whatever the fields say.
    static func batch(baseOffset: Int64 = 0, firstTimestamp: Int64 = 1_000, lastOffsetDelta: Int32? = nil, _ records: [Record]) -> [UInt8] {
        var body = RawWriter()
        for record in records {
            var one = RawWriter()
            one.int8(0)
            one.zigzag(record.timestampDelta)
            one.zigzag(record.offsetDelta)
            one.zigzag(-1)  // no key
            one.zigzag(2)
            one.bytes.append(contentsOf: Array("v!".utf8))
            one.zigzag(0)  // no headers
            body.zigzag(record.claimedLength ?? Int64(one.bytes.count))
            body.bytes.append(contentsOf: one.bytes)
        }
        var tail = RawWriter()
        tail.int16(0)
        tail.int32(lastOffsetDelta ?? Int32(max(records.count - 1, 0)))
        tail.int64(firstTimestamp)
        tail.int64(firstTimestamp)
        tail.int64(-1)
        tail.int16(-1)
        tail.int32(-1)
        tail.int32(Int32(records.count))
        tail.bytes.append(contentsOf: body.bytes)
        var batch = RawWriter()
        batch.int64(baseOffset)
        batch.int32(Int32(9 + tail.bytes.count))
        batch.int32(-1)
        batch.int8(2)
        batch.int32(Int32(bitPattern: crc32c(tail.bytes)))
        batch.bytes.append(contentsOf: tail.bytes)
        return batch.bytes
    }

    private func decode(_ bytes: [UInt8], from offset: Int64 = 0) throws -> FetchedRecords {
        try FetchedRecords(ByteBuffer(bytes: bytes), topic: "t", partition: 0, from: offset)
    }

    @Test("a well-formed batch written by the same helper decodes (the cases below differ from it in one field)")
    func wellFormed() throws {
        let decoded = try decode(Self.batch(baseOffset: 7, [Record(offsetDelta: 0), Record(timestampDelta: 5, offsetDelta: 1)]), from: 7)
        #expect(decoded.messages.map(\.offset) == [7, 8])
        #expect(decoded.messages.map(\.timestampMilliseconds) == [1_000, 1_005])
        #expect(decoded.nextOffset == 9)
    }

    @Test(
        "numbers that would overflow or contradict the batch are refused with an error",
        arguments: [
            ("base offset at the top of Int64", Self.batch(baseOffset: .max - 1, [Record(offsetDelta: 0), Record(offsetDelta: 1), Record(offsetDelta: 2)])),
            ("negative base offset", Self.batch(baseOffset: -5, [Record(offsetDelta: 0)])),
            ("offset delta Int64.max", Self.batch(baseOffset: 10, [Record(offsetDelta: .max)])),
            ("offset delta past the batch's last", Self.batch([Record(offsetDelta: 0), Record(offsetDelta: 5)])),
            ("negative offset delta", Self.batch(baseOffset: 10, [Record(offsetDelta: -3)])),
            ("offsets going backwards", Self.batch(lastOffsetDelta: 2, [Record(offsetDelta: 2), Record(offsetDelta: 1)])),
            ("the same offset twice", Self.batch(lastOffsetDelta: 1, [Record(offsetDelta: 1), Record(offsetDelta: 1)])),
            ("timestamp delta Int64.max", Self.batch([Record(timestampDelta: .max, offsetDelta: 0)])),
            ("timestamp delta Int64.min", Self.batch(firstTimestamp: -10, [Record(timestampDelta: .min, offsetDelta: 0)])),
            ("record length Int64.max", Self.batch([Record(offsetDelta: 0, claimedLength: .max)])),
            ("record length past the batch", Self.batch([Record(offsetDelta: 0, claimedLength: 4_000)])),
        ])
    func refused(_ what: String, _ bytes: [UInt8]) {
        #expect(throws: KafkaWireError.self, "\(what)") { try decode(bytes) }
    }

    @Test("20 000 batches with random bytes overwritten: each decodes or is refused, and what decodes is in offset order from the offset asked for")
    func mutated() throws {
        let original =
            Self.batch(baseOffset: 3, [Record(offsetDelta: 0), Record(timestampDelta: 1, offsetDelta: 1), Record(timestampDelta: 9, offsetDelta: 2)])
            + Self.batch(baseOffset: 6, [Record(offsetDelta: 0), Record(offsetDelta: 1)])
        var generator = SplitMix64(state: 21)
        let extremes: [Int64] = [.max, .min, .max - 1, -1, 0, 1, Int64(Int32.max), Int64(Int32.min)]
        var refused = 0
        for round in 0..<20_000 {
            var bytes = original
            for _ in 0...(round % 3) {
                let at = Int(generator.next() % UInt64(bytes.count))
                if round % 2 == 0 {
                    bytes[at] = UInt8(truncatingIfNeeded: generator.next())
                } else {
                    // An extreme 64-bit number somewhere (a base offset, timestamps, a run of varint bytes).
                    let value = extremes[Int(generator.next() % UInt64(extremes.count))]
                    withUnsafeBytes(of: value.bigEndian) { raw in
                        for (i, byte) in raw.enumerated() where at + i < bytes.count { bytes[at + i] = byte }
                    }
                }
            }
            let from = Int64(generator.next() % 9)
            do {
                let decoded = try decode(bytes, from: from)
                let offsets = decoded.messages.map(\.offset)
                #expect(zip(offsets, offsets.dropFirst()).allSatisfy { $0 < $1 }, "round \(round): offsets in order")
                #expect(offsets.allSatisfy { $0 >= from && $0 < decoded.nextOffset }, "round \(round): offsets between the one asked for and the next")
                #expect(decoded.nextOffset >= from, "round \(round): never backwards")
                #expect(decoded.unreadableAt.map { $0 >= from } ?? true, "round \(round)")
            } catch is KafkaWireError {
                refused += 1
            }
        }
        #expect(refused > 0, "some of the damage is caught")
    }
}
