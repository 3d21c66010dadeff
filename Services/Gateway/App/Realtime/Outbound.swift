import NIOCore

/// A text message on its way to one client, held as the bytes of its WebSocket frame: a server's
/// frames are not masked, so the header and payload are the same for every socket, and one
/// rendering shared by many sockets is encoded once (`EventLoopWriteBatcher` writes the bytes
/// below NIO's frame encoder). A large payload that many sockets receive (a message's JSON) is
/// `shared`: every socket's frame references the same bytes between its own `head` and `tail`
/// (a per-session sequence number, say), so it is never copied per socket.
struct OutboundText: Sendable {
    /// The frame's header followed by the head bytes, in one buffer.
    let frameHead: ByteBuffer
    /// How many of `frameHead`'s bytes are the header.
    private let headerBytes: Int
    let shared: ByteBuffer?
    let tail: ByteBuffer?

    /// Payloads smaller than this are copied into one buffer (cheaper than three).
    static let sharingThreshold = 8 * 1024

    init(_ text: String) {
        let count = text.utf8.count
        var buffer = Self.frameBuffer(payloadBytes: count, headBytes: count)
        buffer.writeString(text)
        self.init(frameHead: buffer, payloadBytes: count, shared: nil, tail: nil)
    }

    init(_ buffer: ByteBuffer) {
        var payload = buffer
        var whole = Self.frameBuffer(payloadBytes: payload.readableBytes, headBytes: payload.readableBytes)
        whole.writeBuffer(&payload)
        self.init(frameHead: whole, payloadBytes: buffer.readableBytes, shared: nil, tail: nil)
    }

    /// `head + shared + tail`, sharing `shared` when it is large.
    init(head: String, shared: ByteBuffer, tail: String) {
        self.init(headBytes: head.utf8.count, writeHead: { $0.writeString(head) }, shared: shared, tail: tail)
    }

    /// `head + shared + tail`, sharing `shared` when it is large, with the head written in place by
    /// `writeHead`, which writes exactly `headBytes` bytes: a frame made per session (a native
    /// dispatch's sequence number) without a `String` made for it first.
    init(headBytes: Int, writeHead: (inout ByteBuffer) -> Void, shared: ByteBuffer, tail: String) {
        let total = headBytes + shared.readableBytes + tail.utf8.count
        let sharing = shared.readableBytes >= Self.sharingThreshold
        var buffer = Self.frameBuffer(payloadBytes: total, headBytes: sharing ? headBytes : total)
        let headStart = buffer.writerIndex
        writeHead(&buffer)
        assert(buffer.writerIndex - headStart == headBytes, "writeHead wrote \(buffer.writerIndex - headStart) bytes, not \(headBytes)")
        if sharing {
            self.init(frameHead: buffer, payloadBytes: total, shared: shared, tail: ByteBuffer(string: tail))
        } else {
            var body = shared
            buffer.writeBuffer(&body)
            buffer.writeString(tail)
            self.init(frameHead: buffer, payloadBytes: total, shared: nil, tail: nil)
        }
    }

    private init(frameHead: ByteBuffer, payloadBytes: Int, shared: ByteBuffer?, tail: ByteBuffer?) {
        self.frameHead = frameHead
        self.headerBytes = Self.headerBytes(payloadBytes: payloadBytes)
        self.shared = shared
        self.tail = tail
    }

    /// The first bytes of the text (all of it unless `shared`).
    var head: ByteBuffer {
        var head = frameHead
        head.moveReaderIndex(forwardBy: headerBytes)
        return head
    }

    /// The text's bytes (not the header's).
    var byteCount: Int { frameHead.readableBytes - headerBytes + (shared?.readableBytes ?? 0) + (tail?.readableBytes ?? 0) }

    /// The frame's bytes on the wire (header included).
    var wireBytes: Int { frameHead.readableBytes + (shared?.readableBytes ?? 0) + (tail?.readableBytes ?? 0) }

    /// How many buffers the frame's bytes are in: the header and head, then the shared bytes and
    /// the tail when the payload is shared.
    var pieceCount: Int { shared == nil ? 1 : 3 }

    /// The whole text (for transports that need one string: polling payloads).
    var text: String {
        var out = String(buffer: head)
        if let shared { out += String(buffer: shared) }
        if let tail { out += String(buffer: tail) }
        return out
    }

    /// A buffer holding a final text frame's header (RFC 6455 §5.2, unmasked) for a payload of
    /// `payloadBytes`, with room for `headBytes` of it.
    private static func frameBuffer(payloadBytes: Int, headBytes: Int) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(headerBytes(payloadBytes: payloadBytes) + headBytes)
        buffer.writeInteger(UInt8(0x81))  // FIN, text
        switch payloadBytes {
        case ...125:
            buffer.writeInteger(UInt8(payloadBytes))
        case ...Int(UInt16.max):
            buffer.writeInteger(UInt8(126))
            buffer.writeInteger(UInt16(payloadBytes))
        default:
            buffer.writeInteger(UInt8(127))
            buffer.writeInteger(UInt64(payloadBytes))
        }
        return buffer
    }

    private static func headerBytes(payloadBytes: Int) -> Int {
        switch payloadBytes {
        case ...125: 2
        case ...Int(UInt16.max): 4
        default: 10
        }
    }
}

/// The frames waiting for one client, bounded in bytes as well as in number: a frame counts from
/// the moment it is queued until the channel reports it written, so a client that does not read
/// holds everything sent to it against the bound.
struct OutboundQueue: Sendable {
    private(set) var frames: [OutboundText] = []
    /// Queued bytes plus bytes handed to the writer and not yet written.
    private(set) var bytes = 0
    /// Frames handed to the channel and not yet written.
    private(set) var framesOnChannel = 0
    /// Since when the channel holds unwritten frames without having written any (nil: none).
    private(set) var writeStarted: ContinuousClock.Instant?
    let maxBytes: Int
    let maxFrames: Int

    init(maxBytes: Int, maxFrames: Int) {
        self.maxBytes = maxBytes
        self.maxFrames = maxFrames
    }

    var isEmpty: Bool { frames.isEmpty }

    /// Whether `more` frames (with `count` bytes) fit; a frame larger than the whole bound fits an
    /// empty queue (one message may be large; a backlog of them may not).
    func accepts(frames more: Int, bytes count: Int) -> Bool {
        guard frames.count + framesOnChannel + more <= maxFrames else { return false }
        return bytes + count <= maxBytes || (bytes == 0 && more == 1)
    }

    /// Queues frames (the caller checked `accepts`).
    mutating func append(_ more: some Sequence<OutboundText>, count: Int) {
        frames.append(contentsOf: more)
        bytes += count
    }

    /// Counts frames handed straight to a waiting writer (they are in flight, not queued).
    mutating func handedOver(count: Int) {
        bytes += count
    }

    /// Takes every queued frame for the writer; their bytes stay counted until `written`.
    mutating func take() -> [OutboundText] {
        defer { frames.removeAll(keepingCapacity: false) }
        return frames
    }

    /// Frames handed straight to the channel (`ChannelWriter`): they count until the channel
    /// reports them written, and the write clock starts if it was idle.
    mutating func handedToChannel(frames: Int, bytes count: Int) {
        bytes += count
        framesOnChannel += frames
        if writeStarted == nil { writeStarted = .now }
    }

    /// The channel wrote (or failed to write) frames handed to it: progress; idle once nothing
    /// is outstanding.
    mutating func channelWrote(frames: Int, bytes count: Int) {
        written(count)
        framesOnChannel = max(0, framesOnChannel - frames)
        writeStarted = framesOnChannel > 0 ? .now : nil
    }

    mutating func written(_ count: Int) {
        bytes = max(0, bytes - count)
    }

    /// Whether the writer has made no progress for longer than `timeout`.
    func isStalled(now: ContinuousClock.Instant, timeout: Duration) -> Bool {
        writeStarted.map { now - $0 > timeout } ?? false
    }

    /// Drops what is queued; frames already on the channel stay counted until written.
    mutating func clear() {
        frames.removeAll(keepingCapacity: false)
        bytes = 0
    }
}

extension Sequence where Element == OutboundText {
    var byteCount: Int { reduce(0) { $0 + $1.byteCount } }
}

/// One socket's frames on their way to its channel, in order: a single frame (a delivery, by far
/// the most common write) held inline, more in an array. A delivery so reaches the socket without
/// an array allocated for its one frame (one allocation per delivery, docs/benchmarks.md, part 46).
struct FrameList: RandomAccessCollection, ExpressibleByArrayLiteral, Sendable {
    private enum Storage: Sendable {
        case one(OutboundText)
        case many([OutboundText])
    }

    private var storage: Storage

    init(_ frame: consuming OutboundText) { storage = .one(frame) }

    init(_ frames: [OutboundText]) { storage = .many(frames) }

    init(arrayLiteral frames: OutboundText...) { storage = frames.count == 1 ? .one(frames[0]) : .many(frames) }

    var startIndex: Int { 0 }

    var endIndex: Int {
        switch storage {
        case .one: 1
        case .many(let frames): frames.count
        }
    }

    subscript(position: Int) -> OutboundText {
        switch storage {
        case .one(let frame):
            precondition(position == 0, "FrameList index out of range")
            return frame
        case .many(let frames): return frames[position]
        }
    }

    // The frames' totals, read in place: through `Sequence` each would copy the list into an
    // iterator and every frame out of it (a retain and a release per buffer; the delivery path
    // made ~70 retains per delivery, docs/benchmarks.md, part 47).

    /// The frames' text bytes (headers not counted).
    var byteCount: Int {
        switch storage {
        case .one(let frame): frame.byteCount
        case .many(let frames): frames.indices.reduce(0) { $0 + frames[$1].byteCount }
        }
    }

    /// The frames' bytes on the wire (headers included).
    var wireBytes: Int {
        switch storage {
        case .one(let frame): frame.wireBytes
        case .many(let frames): frames.indices.reduce(0) { $0 + frames[$1].wireBytes }
        }
    }

    /// How many buffers the frames' bytes are in (a shared payload's frame has three).
    var pieceCount: Int {
        switch storage {
        case .one(let frame): frame.pieceCount
        case .many(let frames): frames.indices.reduce(0) { $0 + frames[$1].pieceCount }
        }
    }

    /// `body` with frame `position`, read in place (no copy of it).
    func withFrame<Result>(at position: Int, _ body: (OutboundText) throws -> Result) rethrows -> Result {
        switch storage {
        case .one(let frame):
            precondition(position == 0, "FrameList index out of range")
            return try body(frame)
        case .many(let frames): return try body(frames[position])
        }
    }

    /// `other`'s frames after these (a drain meeting a socket again).
    mutating func append(contentsOf other: FrameList) {
        var all = Array(self)
        all.append(contentsOf: other)
        storage = .many(all)
    }
}

/// Numbers written into frame buffers in place (a native dispatch's sequence number,
/// `OutboundText(headBytes:writeHead:shared:tail:)`), without a `String` for each.
extension ByteBuffer {
    /// How many bytes `writeDecimal(value)` writes.
    static func decimalBytes(_ value: Int) -> Int {
        guard value >= 0 else { return String(value).utf8.count }
        var count = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            count += 1
        }
        return count
    }

    /// `value` in ASCII decimal digits, as `String(value)` spells it.
    mutating func writeDecimal(_ value: Int) {
        guard value >= 0 else {
            writeString(String(value))
            return
        }
        let count = Self.decimalBytes(value)
        writeWithUnsafeMutableBytes(minimumWritableBytes: count) { bytes in
            var rest = value
            for index in stride(from: count - 1, through: 0, by: -1) {
                bytes[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            return count
        }
    }
}
