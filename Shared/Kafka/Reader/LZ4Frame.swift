import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// Decodes LZ4 frames: the records of a Kafka record batch compressed with `lz4` (message format
/// v2 uses the frame format with a correct header checksum, KIP-57). For the suite's own Kafka
/// readers (`FetchedRecords`), so that lz4 batches — the suite's default codec — need not be
/// handed to librdkafka.
///
/// Every length is checked against what is left of the input and against `limit` for the output
/// (a frame that would decode to more is refused, so a small hostile batch cannot make a reader
/// allocate without bound). Checksums are not verified (the batch's CRC-32C covers the compressed
/// bytes when a reader checks it); a frame with a dictionary id is refused (Kafka uses none).
enum LZ4Frame {
    struct Malformed: Error, CustomStringConvertible {
        var reason: String
        init(_ reason: String) { self.reason = reason }
        var description: String { "malformed lz4 frame: \(reason)" }
    }

    static let magic: UInt32 = 0x184D_2204

    /// The frames in `input`, decoded and concatenated; at most `limit` bytes.
    static func decode(_ input: ByteBuffer, limit: Int) throws -> ByteBuffer {
        try input.withUnsafeReadableBytes { bytes in
            let output = Output(limit: limit, expected: bytes.count * 4)
            var i = 0
            func u32() throws -> UInt32 {
                guard bytes.count - i >= 4 else { throw Malformed("truncated") }
                let value = UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24
                i += 4
                return value
            }
            repeat {
                let frameMagic = try u32()
                if frameMagic & 0xFFFF_FFF0 == 0x184D_2A50 {  // a skippable frame
                    let size = Int(try u32())
                    guard bytes.count - i >= size else { throw Malformed("truncated skippable frame") }
                    i += size
                    continue
                }
                guard frameMagic == magic else { throw Malformed("not an lz4 frame") }
                guard bytes.count - i >= 3 else { throw Malformed("truncated frame descriptor") }
                let flags = bytes[i]
                i += 2  // FLG, BD
                guard flags >> 6 == 1 else { throw Malformed("frame version \(flags >> 6)") }
                guard flags & 0x01 == 0 else { throw Malformed("a dictionary id (Kafka uses none)") }
                let blockChecksums = flags & 0x10 != 0
                let contentSize = flags & 0x08 != 0
                let contentChecksum = flags & 0x04 != 0
                if contentSize {
                    guard bytes.count - i >= 8 else { throw Malformed("truncated content size") }
                    i += 8
                }
                i += 1  // header checksum
                while true {
                    let header = try u32()
                    if header == 0 { break }  // end mark
                    let size = Int(header & 0x7FFF_FFFF)
                    guard bytes.count - i >= size else { throw Malformed("a block beyond the frame") }
                    let block = UnsafeRawBufferPointer(rebasing: bytes[i..<(i + size)])
                    if header & 0x8000_0000 != 0 {
                        try output.append(block)
                    } else {
                        try decodeBlock(block, into: output)
                    }
                    i += size
                    if blockChecksums {
                        guard bytes.count - i >= 4 else { throw Malformed("truncated block checksum") }
                        i += 4
                    }
                }
                if contentChecksum {
                    guard bytes.count - i >= 4 else { throw Malformed("truncated content checksum") }
                    i += 4
                }
            } while i < bytes.count
            return output.buffer()
        }
    }

    /// One compressed block: sequences of literals and a match into what was decoded before
    /// (this block's output or, for linked blocks, the earlier blocks').
    private static func decodeBlock(_ block: UnsafeRawBufferPointer, into output: Output) throws {
        var i = 0
        func length(_ start: Int) throws -> Int {
            var total = start
            guard start == 15 else { return total }
            while true {
                guard i < block.count else { throw Malformed("truncated length") }
                let byte = Int(block[i])
                i += 1
                total += byte
                if byte != 255 { return total }
            }
        }
        while i < block.count {
            let token = Int(block[i])
            i += 1
            let literals = try length(token >> 4)
            guard block.count - i >= literals else { throw Malformed("literals beyond the block") }
            try output.append(UnsafeRawBufferPointer(rebasing: block[i..<(i + literals)]))
            i += literals
            if i == block.count { return }  // the last sequence has literals only
            guard block.count - i >= 2 else { throw Malformed("truncated match offset") }
            let offset = Int(block[i]) | Int(block[i + 1]) << 8
            i += 2
            let matchLength = try length(token & 0x0F) + 4
            try output.copyMatch(offset: offset, length: matchLength)
        }
    }

    /// The decoded bytes, growing by doubling up to `limit`; freed with it, thrown or not.
    private final class Output {
        var bytes: UnsafeMutableRawBufferPointer
        var count = 0
        let limit: Int

        init(limit: Int, expected: Int) {
            self.limit = limit
            bytes = .allocate(byteCount: max(64, min(expected, limit)), alignment: 1)
        }

        func reserve(_ extra: Int) throws {
            guard extra <= limit - count else { throw Malformed("decodes to more than \(limit) bytes") }
            guard count + extra > bytes.count else { return }
            let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: min(limit, max(bytes.count * 2, count + extra)), alignment: 1)
            if count > 0, let target = grown.baseAddress, let source = bytes.baseAddress { target.copyMemory(from: source, byteCount: count) }
            bytes.deallocate()
            bytes = grown
        }

        func append(_ data: UnsafeRawBufferPointer) throws {
            guard !data.isEmpty else { return }
            try reserve(data.count)
            if let target = bytes.baseAddress, let source = data.baseAddress { (target + count).copyMemory(from: source, byteCount: data.count) }
            count += data.count
        }

        /// Copies `length` bytes from `offset` back; an overlapping match repeats what it copies.
        func copyMatch(offset: Int, length: Int) throws {
            guard offset > 0, offset <= count else { throw Malformed("a match offset of \(offset) with \(count) bytes decoded") }
            try reserve(length)
            guard let base = bytes.baseAddress else { return }
            // From `offset` back; when the match overlaps what it writes, the bytes between its
            // source and the end repeat, so each copy may take twice as many as the one before.
            let from = base + (count - offset)
            var written = 0
            while written < length {
                let chunk = min(length - written, offset + written)
                (base + count + written).copyMemory(from: from, byteCount: chunk)
                written += chunk
            }
            count += length
        }

        /// The bytes decoded, copied into a buffer.
        func buffer() -> ByteBuffer {
            ByteBuffer(bytes: UnsafeRawBufferPointer(rebasing: bytes[0..<count]))
        }

        deinit { bytes.deallocate() }
    }
}
