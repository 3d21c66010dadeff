import NIOCore
import ServiceKit

/// Refuses a multipart body whose part headers have a non-ASCII byte in a header *name*, before
/// MultipartKit's parser sees it: MultipartKit 4.7.1 looks such a byte up in a 128-entry table
/// (`isAllowedHeaderFieldNameCharacter`) and traps, so one request would crash the service (found
/// by the schemathesis run, `scripts/fuzz-api.sh`). Header *values* may hold UTF-8 (Korean file
/// names). Fed chunk by chunk, in the order the parser gets them; it follows the same delimiter
/// (`CRLF--boundary`) the parser does, so it knows which bytes are header lines.
struct MultipartHeaderGuard {
    private let delimiter: [UInt8]
    /// How much of `delimiter` the latest bytes matched (the body starts as if after a CRLF).
    private var matched = 2
    private enum State {
        /// In a part's body (or before the first delimiter): looking for the delimiter.
        case body
        /// The rest of the delimiter's line (`--` closes the body, else CRLF).
        case delimiterLine(first: UInt8?)
        /// In the header lines: whether the current line's name ended (a colon seen) and how many
        /// bytes the line has so far, CR not counted.
        case headers(afterColon: Bool, length: Int)
        /// After the closing delimiter: nothing more is parsed.
        case epilogue
    }
    private var state = State.body

    init(boundary: String) throws {
        guard boundary.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw APIError.badRequest("multipart boundary with control or non-ASCII bytes") }
        delimiter = Array("\r\n--\(boundary)".utf8)
    }

    mutating func check(_ chunk: ByteBuffer) throws {
        for byte in chunk.readableBytesView {
            switch state {
            case .epilogue:
                return
            case .body:
                if byte == delimiter[matched] {
                    matched += 1
                    if matched == delimiter.count {
                        matched = 0
                        state = .delimiterLine(first: nil)
                    }
                } else {
                    // CR appears only at the delimiter's start (a boundary has no control bytes).
                    matched = byte == UInt8(ascii: "\r") ? 1 : 0
                }
            case .delimiterLine(let first):
                guard byte < 0x80 else { throw APIError.badRequest("malformed multipart body: non-ASCII after a boundary") }
                if first == nil, byte == UInt8(ascii: "-") {
                    state = .epilogue
                } else if byte == UInt8(ascii: "\n") {
                    state = .headers(afterColon: false, length: 0)
                } else {
                    state = .delimiterLine(first: byte)
                }
            case .headers(let afterColon, let length):
                if byte == UInt8(ascii: "\n") {
                    // An empty line ends the headers; the part's body follows.
                    state = length == 0 ? .body : .headers(afterColon: false, length: 0)
                } else if byte == UInt8(ascii: "\r") {
                    state = .headers(afterColon: afterColon, length: length)
                } else {
                    guard afterColon || byte < 0x80 else { throw APIError.badRequest("malformed multipart body: non-ASCII header name") }
                    state = .headers(afterColon: afterColon || byte == UInt8(ascii: ":"), length: length + 1)
                }
            }
        }
    }
}
