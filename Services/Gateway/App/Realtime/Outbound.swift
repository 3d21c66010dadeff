import HummingbirdWebSocket
import NIOCore
import NIOWebSocket

/// A text message on its way to one client. A large payload that many sockets receive (a
/// message's JSON) is `shared`: every socket's queue references the same bytes, and the
/// WebSocket writer sends it as continuation fragments between the socket's own `head` and
/// `tail` (a per-session sequence number, say), so it is never copied per socket.
struct OutboundText: Sendable {
    let head: ByteBuffer
    let shared: ByteBuffer?
    let tail: ByteBuffer?

    /// Payloads smaller than this are copied into one frame (cheaper than three frames).
    static let sharingThreshold = 8 * 1024

    init(_ text: String) {
        head = ByteBuffer(string: text)
        shared = nil
        tail = nil
    }

    init(_ buffer: ByteBuffer) {
        head = buffer
        shared = nil
        tail = nil
    }

    /// `head + shared + tail`, sharing `shared` when it is large.
    init(head: String, shared: ByteBuffer, tail: String) {
        if shared.readableBytes >= Self.sharingThreshold {
            self.head = ByteBuffer(string: head)
            self.shared = shared
            self.tail = ByteBuffer(string: tail)
        } else {
            var whole = ByteBuffer()
            whole.reserveCapacity(head.utf8.count + shared.readableBytes + tail.utf8.count)
            whole.writeString(head)
            var body = shared
            whole.writeBuffer(&body)
            whole.writeString(tail)
            self.head = whole
            self.shared = nil
            self.tail = nil
        }
    }

    var byteCount: Int { head.readableBytes + (shared?.readableBytes ?? 0) + (tail?.readableBytes ?? 0) }

    /// The whole text (for transports that need one string: polling payloads).
    var text: String {
        var out = String(buffer: head)
        if let shared { out += String(buffer: shared) }
        if let tail { out += String(buffer: tail) }
        return out
    }

    /// Writes the message: one text frame, or text + continuation fragments around the shared bytes.
    func write(to outbound: WebSocketOutboundWriter) async throws {
        guard let shared, let tail else {
            try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .text, data: head)))
            return
        }
        try await outbound.write(.custom(WebSocketFrame(fin: false, opcode: .text, data: head)))
        try await outbound.write(.custom(WebSocketFrame(fin: false, opcode: .continuation, data: shared)))
        try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .continuation, data: tail)))
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

    /// Whether `more` (with `count` bytes) fits; a frame larger than the whole bound fits an
    /// empty queue (one message may be large; a backlog of them may not).
    func accepts(_ more: [OutboundText], count: Int) -> Bool {
        guard frames.count + framesOnChannel + more.count <= maxFrames else { return false }
        return bytes + count <= maxBytes || (bytes == 0 && more.count == 1)
    }

    /// Queues frames (the caller checked `accepts`).
    mutating func append(_ more: [OutboundText], count: Int) {
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

extension Array where Element == OutboundText {
    var byteCount: Int { reduce(0) { $0 + $1.byteCount } }
}
