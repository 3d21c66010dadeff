import Foundation
import NIOCore
import ServiceKit

/// A `multipart/form-data` body parser (RFC 7578, RFC 2046 §5.1), fed chunk by chunk in the
/// order they arrive.
///
/// It finds delimiters with `memchr` and `memcmp` over whole chunks and hands a part's body on as
/// slices of the chunks it came in (no copy, no per-byte work in Swift), so a 5 MB upload costs
/// microseconds in a release build and stays fast in a debug one. (MultipartKit's byte-at-a-time
/// parser took 4 s for 5 MB in the debug test build, long enough for a loaded CI run to time a
/// client out; it also trapped on a non-ASCII header name.)
///
/// Hostile bodies are refused with E11 (`APIError.badRequest`), never a trap: a part's header
/// block is bounded (`maxHeaderBytes`), header names must be RFC 9110 tokens, a header line is
/// split at CRLF only (a bare CR or LF in it is refused), what follows a delimiter must be `--`
/// or optional blanks and CRLF. The preamble before the first delimiter and the epilogue after the
/// closing one are ignored.
struct MultipartScanner {
    enum Event: Equatable {
        case header(name: String, value: String)
        /// Bytes of the current part's body (a part's body may come in any number of pieces).
        case body(ByteBuffer)
        /// The current part ended (its delimiter, or the closing one, was read).
        case partEnd
    }

    /// The longest boundary accepted (RFC 2046 says 70; clients stay well below this).
    static let maxBoundaryBytes = 200
    /// The bytes a part's header block may take (Content-Disposition with a long file name and a
    /// Content-Type need well under 1 KiB).
    static let maxHeaderBytes = 16 * 1024
    /// Blanks allowed between a delimiter and its CRLF (RFC 2046's transport padding).
    static let maxPaddingBytes = 64

    private enum State: Equatable {
        /// Before the first delimiter: bytes are skipped.
        case preamble
        /// Just after a delimiter: `--` (the closing one) or blanks and CRLF.
        case afterDelimiter
        /// In a part's header lines: `bytes` of them consumed so far, and how many bytes of
        /// `pending` are known to hold no LF (each byte is searched once, however the lines are
        /// chunked).
        case headers(bytes: Int, searched: Int)
        /// In a part's body: looking for the next delimiter.
        case body
        /// After the closing delimiter: bytes are skipped.
        case epilogue
    }

    /// `CRLF--boundary`: what separates parts (the first one's CRLF is implied).
    private let delimiter: [UInt8]
    private var state = State.preamble
    /// Bytes received but not yet consumed: at most a possible delimiter's start, a header block,
    /// or the few bytes after a delimiter.
    private var pending: ByteBuffer

    init(boundary: String) throws {
        guard !boundary.isEmpty, boundary.utf8.count <= Self.maxBoundaryBytes else {
            throw APIError.badRequest("multipart boundary must be 1 to \(Self.maxBoundaryBytes) bytes")
        }
        guard boundary.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw APIError.badRequest("multipart boundary with control or non-ASCII bytes") }
        delimiter = Array("\r\n--\(boundary)".utf8)
        // The body may open with the delimiter itself: as if a CRLF came before it.
        pending = ByteBuffer(bytes: [UInt8(ascii: "\r"), UInt8(ascii: "\n")])
    }

    /// Whether the closing delimiter has been read (a body that ends before it is truncated).
    var isComplete: Bool { state == .epilogue }

    /// Parses `chunk`, handing every event to `emit` in order.
    mutating func feed(_ chunk: ByteBuffer, _ emit: (Event) throws -> Void) throws {
        guard state != .epilogue else { return }
        let aliasesChunk = pending.readableBytes == 0
        if aliasesChunk {
            pending = chunk
        } else {
            var chunk = chunk
            pending.writeBuffer(&chunk)
        }
        while try step(emit) {}
        if pending.readableBytes == 0 {
            pending = ByteBuffer()
        } else if aliasesChunk {
            // What is left is small (see `pending`): a copy, not a view that pins the chunk.
            pending = ByteBuffer(bytes: pending.readableBytesView)
        } else if pending.readerIndex > pending.readableBytes {
            pending.discardReadBytes()  // amortised: at most as many bytes moved as were consumed
        }
    }

    /// One step of parsing; false when more bytes are needed (or the epilogue is reached).
    private mutating func step(_ emit: (Event) throws -> Void) throws -> Bool {
        switch state {
        case .epilogue:
            pending.clear()
            return false
        case .preamble, .body:
            let inBody = state == .body
            let (found, safe) = pending.withUnsafeReadableBytes { Self.search(delimiter, in: $0) }
            if let found {
                if inBody, found > 0, let slice = pending.readSlice(length: found) {
                    try emit(.body(slice))
                } else {
                    pending.moveReaderIndex(forwardBy: found)
                }
                pending.moveReaderIndex(forwardBy: delimiter.count)
                if inBody { try emit(.partEnd) }
                state = .afterDelimiter
                return true
            }
            if inBody, safe > 0, let slice = pending.readSlice(length: safe) {
                try emit(.body(slice))
            } else {
                pending.moveReaderIndex(forwardBy: safe)
            }
            return false
        case .afterDelimiter:
            return try afterDelimiter()
        case .headers(let bytes, let searched):
            return try headerLine(readSoFar: bytes, searched: searched, emit)
        }
    }

    /// After a delimiter: `--` ends the body; else blanks, then CRLF, then the next part's headers.
    private mutating func afterDelimiter() throws -> Bool {
        let view = pending.readableBytesView
        guard let first = view.first else { return false }
        if first == UInt8(ascii: "-") {
            guard view.count >= 2 else { return false }
            guard view[view.startIndex + 1] == UInt8(ascii: "-") else { throw Self.malformed("a delimiter followed by a single '-'") }
            state = .epilogue
            pending.clear()
            return false
        }
        guard let cr = view.firstIndex(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }) else {
            guard view.count <= Self.maxPaddingBytes else { throw Self.malformed("blanks after a delimiter") }
            return false
        }
        guard view[cr] == UInt8(ascii: "\r"), cr - view.startIndex <= Self.maxPaddingBytes else {
            throw Self.malformed("a delimiter not followed by CRLF or '--'")
        }
        guard cr + 1 < view.endIndex else { return false }
        guard view[cr + 1] == UInt8(ascii: "\n") else { throw Self.malformed("a delimiter not followed by CRLF or '--'") }
        pending.moveReaderIndex(forwardBy: cr + 2 - view.startIndex)
        state = .headers(bytes: 0, searched: 0)
        return true
    }

    /// One header line (or the empty line that ends the headers).
    private mutating func headerLine(readSoFar: Int, searched: Int, _ emit: (Event) throws -> Void) throws -> Bool {
        let view = pending.readableBytesView
        guard let end = view[(view.startIndex + searched)...].firstIndex(of: UInt8(ascii: "\n")) else {
            guard readSoFar + view.count <= Self.maxHeaderBytes else { throw Self.malformed("part headers over \(Self.maxHeaderBytes) bytes") }
            state = .headers(bytes: readSoFar, searched: view.count)
            return false
        }
        let length = end - view.startIndex + 1
        guard readSoFar + length <= Self.maxHeaderBytes else { throw Self.malformed("part headers over \(Self.maxHeaderBytes) bytes") }
        guard end > view.startIndex, view[end - 1] == UInt8(ascii: "\r") else { throw Self.malformed("a header line not ended by CRLF") }
        let line = view[view.startIndex..<(end - 1)]
        pending.moveReaderIndex(forwardBy: length)
        if line.isEmpty {
            state = .body
            return true
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { throw Self.malformed("a header line without ':'") }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty, name.allSatisfy(Self.isTokenByte) else { throw Self.malformed("a header name that is not a token") }
        var value = line[(colon + 1)...]
        guard !value.contains(UInt8(ascii: "\r")) else { throw Self.malformed("a bare CR in a header") }
        while let first = value.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { value = value.dropFirst() }
        while let last = value.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { value = value.dropLast() }
        // Values may hold UTF-8 (Korean file names); a byte that is not UTF-8 becomes U+FFFD.
        try emit(.header(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self)))
        state = .headers(bytes: readSoFar + length, searched: 0)
        return true
    }

    /// Where `delimiter` first occurs in `bytes` (nil if nowhere), and how many leading bytes
    /// cannot be part of a delimiter that later bytes complete (all of them but a suffix that is a
    /// prefix of the delimiter).
    static func search(_ delimiter: [UInt8], in bytes: UnsafeRawBufferPointer) -> (found: Int?, safe: Int) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return (nil, 0) }
        let count = bytes.count
        let first = Int32(delimiter[0])
        return delimiter.withUnsafeBytes { pattern in
            guard let patternBase = pattern.baseAddress else { return (nil, count) }
            var offset = 0
            while offset < count, let hit = memchr(base + offset, first, count - offset) {
                let index = base.distance(to: UnsafeRawPointer(hit))
                let available = count - index
                if available >= delimiter.count {
                    if memcmp(base + index, patternBase, delimiter.count) == 0 { return (index, index) }
                } else if memcmp(base + index, patternBase, available) == 0 {
                    // The bytes end in the delimiter's first `available` bytes: keep them.
                    return (nil, index)
                }
                offset = index + 1
            }
            return (nil, count)
        }
    }

    /// RFC 9110 `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    private static func malformed(_ what: String) -> APIError { APIError.badRequest("malformed multipart body: \(what)") }
}
