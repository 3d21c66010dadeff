/// One item decoded from the byte stream.
enum StompParseResult: Sendable, Equatable {
    /// A complete frame.
    case frame(StompFrame)
    /// A bare EOL (`\n` or `\r\n`) between frames: a heart-beat. EOLs that
    /// follow a frame's NUL are reported the same way.
    case heartbeat
}

/// Incremental STOMP 1.2 decoder.
///
/// Feed bytes with ``append(_:)`` (e.g. each WebSocket message) and then call
/// ``next()`` until it returns `nil`. A message may hold several frames and
/// heart-beats, and a frame may be split across any number of appends.
///
/// Limits are enforced while buffering, so hostile input is rejected as soon as
/// a limit is provably exceeded rather than when the NUL finally arrives; the
/// buffer never holds more than the current (bounded) frame plus the last append.
/// After an error the parser discards its buffer, ignores further input and
/// rethrows the same error from ``next()``.
struct StompParser: Sendable {
    /// Maximum size of a whole frame, command line through terminating NUL.
    let maxFrameBytes: Int
    /// Maximum number of header lines per frame (duplicates count).
    let maxHeaderCount: Int
    /// Maximum length of one raw header line, excluding its EOL.
    let maxHeaderLineBytes: Int
    /// Maximum length of the command line, excluding its EOL.
    let maxCommandBytes: Int

    private enum Phase: Sendable {
        case command
        case headers
        case body
        case failed(StompParseError)
    }

    private struct Line {
        /// The line without its EOL.
        var content: ArraySlice<UInt8>
        /// Octets consumed, EOL included.
        var length: Int
    }

    private static let lineFeed: UInt8 = 0x0A
    private static let carriageReturn: UInt8 = 0x0D
    private static let null: UInt8 = 0x00
    private static let colon: UInt8 = 0x3A
    /// Upper bound for every limit, so size arithmetic can never overflow.
    private static let limitCeiling = Int(Int32.max)

    private var buffer: [UInt8] = []
    /// Index of the first unconsumed octet in `buffer`.
    private var start = 0
    /// Octets after `start` already searched for the current delimiter.
    private var scanned = 0
    private var phase = Phase.command
    // The frame being decoded; only meaningful in the `.headers` and `.body` phases.
    private var frameCommand = StompCommand.send
    private var frameHeaders = StompHeaders()
    private var frameContentLength: Int?
    /// Octets of the current frame consumed so far; 0 between frames.
    private var frameBytes = 0

    /// Creates a parser. Limits are clamped to `0...Int32.max`.
    init(
        maxFrameBytes: Int = 65_536,
        maxHeaderCount: Int = 64,
        maxHeaderLineBytes: Int = 8_192,
        maxCommandBytes: Int = 16
    ) {
        self.maxFrameBytes = Self.clamp(maxFrameBytes)
        self.maxHeaderCount = Self.clamp(maxHeaderCount)
        self.maxHeaderLineBytes = Self.clamp(maxHeaderLineBytes)
        self.maxCommandBytes = Self.clamp(maxCommandBytes)
    }

    /// Octets received but not yet returned as a frame or heart-beat.
    var bufferedByteCount: Int { buffer.count - start }

    /// Nothing buffered and no frame begun: an EOL received now is a heart-beat.
    var isBetweenFrames: Bool {
        guard bufferedByteCount == 0, case .command = phase else { return false }
        return true
    }

    /// `true` once ``next()`` has thrown; the connection should be closed.
    var hasFailed: Bool {
        if case .failed = phase { true } else { false }
    }

    /// Appends received octets. Ignored after the parser has failed.
    mutating func append(_ bytes: some Sequence<UInt8>) {
        if case .failed = phase { return }
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Returns the next frame or heart-beat, or `nil` when more input is needed.
    ///
    /// - Throws: ``StompParseError``; every later call throws the same error.
    mutating func next() throws(StompParseError) -> StompParseResult? {
        if case .failed(let error) = phase { throw error }
        do throws(StompParseError) {
            let result = try decodeNext()
            if result == nil { compact() }
            return result
        } catch {
            phase = .failed(error)
            buffer = []
            start = 0
            scanned = 0
            frameHeaders = StompHeaders()
            throw error
        }
    }

    // MARK: - State machine

    private mutating func decodeNext() throws(StompParseError) -> StompParseResult? {
        while true {
            switch phase {
            case .failed(let error):
                throw error

            case .command:
                guard let line = try takeLine(maxLength: maxCommandBytes, tooLong: .commandTooLong(limit: maxCommandBytes))
                else { return nil }
                if line.content.isEmpty { return .heartbeat }
                let text = String(decoding: line.content, as: UTF8.self)
                guard let command = StompCommand(rawValue: text) else { throw .unknownCommand(text) }
                frameCommand = command
                frameHeaders = StompHeaders()
                frameContentLength = nil
                frameBytes = line.length
                try requireFrameSize(atLeast: frameBytes + 1)
                phase = .headers

            case .headers:
                guard
                    let line = try takeLine(
                        maxLength: maxHeaderLineBytes, tooLong: .headerLineTooLong(limit: maxHeaderLineBytes))
                else { return nil }
                frameBytes += line.length
                try requireFrameSize(atLeast: frameBytes + 1)
                if line.content.isEmpty {
                    frameContentLength = try parseContentLength()
                    if let length = frameContentLength {
                        try requireFrameSize(atLeast: frameBytes + length + 1)
                    }
                    phase = .body
                } else {
                    guard frameHeaders.count < maxHeaderCount else { throw .tooManyHeaders(limit: maxHeaderCount) }
                    let header = try Self.parseHeader(line.content, escaped: frameCommand.escapesHeaders)
                    frameHeaders.append(header.name, header.value)
                }

            case .body:
                guard let body = try takeBody() else { return nil }
                let frame = StompFrame(command: frameCommand, headers: frameHeaders, body: body)
                frameHeaders = StompHeaders()
                frameBytes = 0
                phase = .command
                return .frame(frame)
            }
        }
    }

    /// Consumes one EOL-terminated line, or returns `nil` (after checking limits
    /// against the partial line) when the EOL has not arrived yet.
    private mutating func takeLine(maxLength: Int, tooLong: StompParseError) throws(StompParseError) -> Line? {
        var index = start + scanned
        while index < buffer.count {
            let byte = buffer[index]
            if byte == Self.lineFeed {
                var end = index
                if end > start, buffer[end - 1] == Self.carriageReturn { end -= 1 }
                guard end - start <= maxLength else { throw tooLong }
                let line = Line(content: buffer[start..<end], length: index + 1 - start)
                start = index + 1
                scanned = 0
                return line
            }
            if byte == Self.null { throw .unexpectedNull }
            index += 1
        }
        let pending = buffer.count - start
        scanned = pending
        // A trailing CR may still turn out to be part of a CRLF.
        let contentSoFar = pending > 0 && buffer[buffer.count - 1] == Self.carriageReturn ? pending - 1 : pending
        guard contentSoFar <= maxLength else { throw tooLong }
        try requireFrameSize(atLeast: frameBytes + pending + 1)
        return nil
    }

    /// Consumes the body and its NUL, or returns `nil` when incomplete.
    private mutating func takeBody() throws(StompParseError) -> [UInt8]? {
        let available = buffer.count - start
        if let length = frameContentLength {
            guard available > length else { return nil }
            guard buffer[start + length] == Self.null else { throw .missingNullTerminator }
            let body = Array(buffer[start..<(start + length)])
            start += length + 1
            frameBytes += length + 1
            return body
        }
        if let nul = buffer[(start + scanned)...].firstIndex(of: Self.null) {
            frameBytes += nul + 1 - start
            try requireFrameSize(atLeast: frameBytes)
            let body = Array(buffer[start..<nul])
            start = nul + 1
            scanned = 0
            return body
        }
        scanned = available
        try requireFrameSize(atLeast: frameBytes + available + 1)
        return nil
    }

    // MARK: - Helpers

    private func requireFrameSize(atLeast size: Int) throws(StompParseError) {
        if size > maxFrameBytes { throw .frameTooLarge(limit: maxFrameBytes) }
    }

    /// Validates the first `content-length` header (first occurrence wins).
    private func parseContentLength() throws(StompParseError) -> Int? {
        guard let raw = frameHeaders[StompHeaderName.contentLength] else { return nil }
        guard !raw.isEmpty, raw.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw .invalidContentLength(raw)
        }
        var value = 0
        for digit in raw.utf8 {
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
            // `value` stays below 10 * Int32.max, so this cannot overflow.
            if value > maxFrameBytes { throw .frameTooLarge(limit: maxFrameBytes) }
        }
        return value
    }

    /// Splits `name:value` at the first colon and unescapes both parts if needed.
    private static func parseHeader(
        _ line: ArraySlice<UInt8>,
        escaped: Bool
    ) throws(StompParseError) -> (name: String, value: String) {
        guard let separator = line.firstIndex(of: colon) else { throw .missingColon }
        let rawName = line[line.startIndex..<separator]
        let rawValue = line[(separator + 1)...]
        guard !rawName.isEmpty else { throw .emptyHeaderName }
        let nameBytes: [UInt8]
        let valueBytes: [UInt8]
        if escaped {
            nameBytes = try StompHeaderEscaping.unescape(rawName)
            valueBytes = try StompHeaderEscaping.unescape(rawValue)
        } else {
            nameBytes = Array(rawName)
            valueBytes = Array(rawValue)
        }
        guard
            let name = String(validating: nameBytes, as: UTF8.self),
            let value = String(validating: valueBytes, as: UTF8.self)
        else { throw .invalidUTF8 }
        return (name, value)
    }

    /// Drops consumed octets once they make up at least half of the buffer.
    private mutating func compact() {
        guard start > 0 else { return }
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 4_096)
        } else if start >= buffer.count / 2 {
            buffer.removeSubrange(0..<start)
        } else {
            return
        }
        start = 0
    }

    private static func clamp(_ limit: Int) -> Int {
        min(max(limit, 0), limitCeiling)
    }
}
