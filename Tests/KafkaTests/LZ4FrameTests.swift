import NIOCore
import Testing

@testable import Kafka

/// `LZ4Frame.decode` on hand-made frames: the block format's sequences (literals, overlapping
/// matches, long lengths), uncompressed blocks, and hostile frames, each refused with an error.
/// (lz4 frames produced by librdkafka are read end to end in `PartitionReaderTests` and
/// `OwnFetchTests`.)
@Suite("lz4 frames")
struct LZ4FrameTests {
    /// A frame (version 1, independent blocks, no checksums) holding `blocks` (true: stored uncompressed).
    private func frame(_ blocks: [([UInt8], Bool)], flags: UInt8 = 0x60, trailer: [UInt8] = []) -> ByteBuffer {
        var bytes: [UInt8] = [0x04, 0x22, 0x4D, 0x18, flags, 0x40, 0x82]
        for (block, stored) in blocks {
            let size = UInt32(block.count) | (stored ? 0x8000_0000 : 0)
            bytes += [UInt8(size & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size >> 16 & 0xFF), UInt8(size >> 24)]
            bytes += block
        }
        return ByteBuffer(bytes: bytes + [0, 0, 0, 0] + trailer)
    }

    private func decode(_ frame: ByteBuffer, limit: Int = 1 << 20) throws -> String {
        String(buffer: try LZ4Frame.decode(frame, limit: limit))
    }

    @Test("literals, an overlapping match (offset 4, 12 bytes) and closing literals")
    func sequences() throws {
        let block: [UInt8] = [0x48] + Array("abcd".utf8) + [4, 0] + [0x30] + Array("xyz".utf8)
        #expect(try decode(frame([(block, false)])) == "abcd" + "abcdabcdabcd" + "xyz")
    }

    @Test("lengths of 15 and more continue in further bytes (255 means one more)")
    func longLengths() throws {
        let literals = [UInt8](repeating: UInt8(ascii: "q"), count: 15 + 255 + 10)
        // 280 literals, then a match of 4 + 15 + 255 + 1 = 275 bytes at offset 1, then one literal.
        let block: [UInt8] = [0xFF, 255, 10] + literals + [1, 0, 255, 1] + [0x10, UInt8(ascii: "!")]
        #expect(try decode(frame([(block, false)])) == String(repeating: "q", count: 280 + 275) + "!")
    }

    @Test("a stored block, a second block matching into the first, a content size and checksums skipped")
    func storedAndLinkedBlocks() throws {
        let second: [UInt8] = [0x05, 11, 0]  // no literals, a match of 9 at offset 11
        let stored = Array("hello world".utf8)
        // FLG: version 1, block checksums, content size, content checksum.
        var bytes: [UInt8] = [0x04, 0x22, 0x4D, 0x18, 0x5C, 0x40] + [20, 0, 0, 0, 0, 0, 0, 0] + [0x00]
        bytes += [11, 0, 0, 0x80] + stored + [1, 2, 3, 4]
        bytes += [UInt8(second.count), 0, 0, 0] + second + [5, 6, 7, 8]
        bytes += [0, 0, 0, 0] + [9, 9, 9, 9]
        #expect(try decode(ByteBuffer(bytes: bytes)) == "hello world" + "hello wor")
    }

    @Test(
        "hostile or broken frames are refused, never read past their end",
        arguments: [
            ("not a frame", ByteBuffer(bytes: Array("plain text".utf8))),
            ("truncated header", ByteBuffer(bytes: [0x04, 0x22, 0x4D, 0x18, 0x60])),
            ("a block beyond the frame", ByteBuffer(bytes: [0x04, 0x22, 0x4D, 0x18, 0x60, 0x40, 0x82, 100, 0, 0, 0, 0x10, 0x41])),
            ("no end mark", ByteBuffer(bytes: [0x04, 0x22, 0x4D, 0x18, 0x60, 0x40, 0x82, 2, 0, 0, 0, 0x10, 0x41])),
        ])
    func refusesBrokenFrames(_ name: String, _ bytes: ByteBuffer) {
        #expect(throws: LZ4Frame.Malformed.self, "\(name)") { _ = try LZ4Frame.decode(bytes, limit: 1 << 20) }
    }

    @Test("a match before the start of the output, a zero offset, literals past the block, a dictionary, version 2: refused")
    func refusesBadSequences() {
        let bad: [[UInt8]] = [
            [0x10, UInt8(ascii: "a"), 5, 0],  // offset 5 with 1 byte decoded
            [0x10, UInt8(ascii: "a"), 0, 0],  // offset 0
            [0x50, UInt8(ascii: "a")],  // 5 literals, 1 there
            [0x10, UInt8(ascii: "a"), 1],  // a truncated offset
            [0xF0],  // a literal length continued past the block
        ]
        for block in bad {
            #expect(throws: LZ4Frame.Malformed.self, "\(block)") { _ = try LZ4Frame.decode(frame([(block, false)]), limit: 1 << 20) }
        }
        #expect(throws: LZ4Frame.Malformed.self) { _ = try LZ4Frame.decode(frame([], flags: 0x61), limit: 1 << 20) }
        #expect(throws: LZ4Frame.Malformed.self) { _ = try LZ4Frame.decode(frame([], flags: 0xA0), limit: 1 << 20) }
    }

    @Test("a few bytes that would decode to more than the limit are refused before the memory is taken")
    func refusesBombs() {
        // One literal, then a match at offset 1 of 4 + 15 + 255 × 4 000 bytes (about 1 MB) per
        // sequence, 100 sequences: about 100 MB from about 400 KB.
        var block: [UInt8] = [0x1F, UInt8(ascii: "z"), 1, 0] + [UInt8](repeating: 255, count: 4_000) + [0]
        for _ in 0..<99 { block += [0x0F, 1, 0] + [UInt8](repeating: 255, count: 4_000) + [0] }
        block += [0x10, UInt8(ascii: "z")]
        #expect(throws: LZ4Frame.Malformed.self) { _ = try LZ4Frame.decode(frame([(block, false)]), limit: 8 << 20) }
        #expect((try? LZ4Frame.decode(frame([(block, false)]), limit: 200 << 20))?.readableBytes == 1 + 100 * (4 + 15 + 255 * 4_000) + 1)
    }
}
