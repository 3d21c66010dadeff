import NIOCore
import NIOEmbedded
import NIOWebSocket
import Synchronization
import Testing

@testable import GatewayApp

/// Frames go straight onto the channel, batched per event loop (`EventLoopWriteBatcher`); a
/// socket's unwritten frames count against its bound until the channel reports them written
/// (`OutboundQueue`).
@Suite("Writing frames straight onto channels")
struct ChannelWriterTests {
    /// A channel as the gateway's WebSockets have it: frames leave through NIO's encoder.
    private func socket(_ loop: EmbeddedEventLoop, below: (any ChannelHandler)? = nil) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(loop: loop)
        if let below { try channel.pipeline.syncOperations.addHandler(below) }
        try channel.pipeline.syncOperations.addHandler(WebSocketFrameEncoder())
        return channel
    }

    /// The texts of the server frames on the wire (each must be one final text frame).
    private func texts(_ channel: EmbeddedChannel) throws -> [String] {
        var wire = ByteBuffer()
        while var bytes = try channel.readOutbound(as: ByteBuffer.self) { wire.writeBuffer(&bytes) }
        return try ServerFrames.parse(&wire).map { frame in
            #expect(frame.fin && frame.opcode == 0x1)
            return String(buffer: frame.payload)
        }
    }

    @Test("one drain per loop writes every queued frame in order, per channel, and reports each batch written")
    func batchesPerLoop() throws {
        let loop = EmbeddedEventLoop()
        let a = try socket(loop)
        let b = try socket(loop)
        let (outA, outB) = (FrameOutput(channel: a), FrameOutput(channel: b))
        let batcher = EventLoopWriteBatcher(eventLoop: loop)
        let completions = CountingListener()
        batcher.write([OutboundText("a1"), OutboundText("a2")], to: outA, receipt: WriteReceipt(completions, frames: 1, bytes: 0))
        batcher.write([OutboundText("b1")], to: outB, receipt: WriteReceipt(completions, frames: 1, bytes: 0))
        batcher.write([OutboundText("a3")], to: outA, receipt: WriteReceipt(completions, frames: 1, bytes: 2))
        // Nothing is written before the loop runs the drain.
        #expect(try texts(a).isEmpty)
        loop.run()
        #expect(try texts(a) == ["a1", "a2", "a3"])
        #expect(try texts(b) == ["b1"])
        // The socket took everything: reported at once, with no promise.
        // a's two receipts (one listener) arrive added up, b's on its own: every frame and byte counted.
        #expect(completions.count == 2)
        #expect(completions.frames == 3 && completions.bytes == 2)
        // A later write schedules a new drain.
        batcher.write([OutboundText("a4")], to: outA, receipt: nil)
        loop.run()
        #expect(try texts(a) == ["a4"])
        _ = try a.finish()
        _ = try b.finish()
    }

    @Test("every length's header (7-bit, 16-bit, 64-bit) encodes as NIO's encoder would, with the text after it")
    func headers() throws {
        for count in [0, 1, 125, 126, 65_535, 65_536] {
            let text = String(repeating: "é", count: count / 2) + String(repeating: "x", count: count % 2)
            let ours = OutboundText(text)
            var wire = ours.frameHead
            var nio = ByteBuffer()
            let encoded = EmbeddedChannel(handler: WebSocketFrameEncoder())
            try encoded.writeOutbound(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: text)))
            while var bytes = try encoded.readOutbound(as: ByteBuffer.self) { nio.writeBuffer(&bytes) }
            #expect(wire == nio, "\(count) bytes")
            #expect(String(buffer: ours.head) == text && ours.byteCount == text.utf8.count)
            #expect(try ServerFrames.parse(&wire).map { String(buffer: $0.payload) } == [text])
            _ = try encoded.finish()
        }
    }

    @Test("a frame list's totals (text bytes, bytes on the wire, buffers) are its frames' sums, for one frame or many, shared or not")
    func frameListTotals() {
        let shared = OutboundText(head: "[", shared: ByteBuffer(repeating: 0x78, count: OutboundText.sharingThreshold), tail: "]")
        let small = OutboundText("hello")
        let long = OutboundText(String(repeating: "y", count: 300))
        let cases: [[OutboundText]] = [[small], [shared], [small, long], [small, shared, long]]
        for frames in cases {
            let list = frames.count == 1 ? FrameList(frames[0]) : FrameList(frames)
            #expect(list.count == frames.count)
            #expect(list.byteCount == frames.map(\.text.utf8.count).reduce(0, +))
            #expect(list.wireBytes == frames.map { $0.pieces.map(\.readableBytes).reduce(0, +) }.reduce(0, +))
            #expect(list.pieceCount == frames.map(\.pieces.count).reduce(0, +))
            for index in frames.indices {
                #expect(list.withFrame(at: index) { $0.text } == frames[index].text)
            }
        }
        // The wire bytes count the headers: 2 bytes up to 125, 4 up to 65 535.
        #expect(FrameList(small).wireBytes == 2 + 5 && FrameList(long).wireBytes == 4 + 300)
        #expect(FrameList(shared).pieceCount == 3 && FrameList(shared).byteCount == OutboundText.sharingThreshold + 2)
    }

    @Test("a large shared payload goes out in one frame whose middle is the shared bytes themselves, not a copy")
    func sharedPayload() throws {
        let loop = EmbeddedEventLoop()
        let channel = try socket(loop)
        let shared = ByteBuffer(repeating: UInt8(ascii: "x"), count: OutboundText.sharingThreshold)
        let text = OutboundText(head: "[", shared: shared, tail: "]")
        EventLoopWriteBatcher(eventLoop: loop).write([text], to: FrameOutput(channel: channel), receipt: nil)
        loop.run()
        let written = try (0..<3).compactMap { _ in try channel.readOutbound(as: ByteBuffer.self) }
        #expect(written.count == 3)
        #expect(written.dropFirst().first.map { $0.withUnsafeReadableBytes { $0.baseAddress } } == shared.withUnsafeReadableBytes { $0.baseAddress })
        var wire = ByteBuffer()
        for var bytes in written { wire.writeBuffer(&bytes) }
        let frames = try ServerFrames.parse(&wire)
        #expect(frames.count == 1 && frames.first?.fin == true)
        #expect(frames.first.map { String(buffer: $0.payload) } == "[" + String(repeating: "x", count: OutboundText.sharingThreshold) + "]")
        #expect(text.text == "[" + String(repeating: "x", count: OutboundText.sharingThreshold) + "]")
        _ = try channel.finish()
    }

    @Test("frames for a connection that closed are reported done (nothing waits on it), not written")
    func closedChannel() throws {
        let loop = EmbeddedEventLoop()
        let channel = try socket(loop)
        let output = FrameOutput(channel: channel)
        _ = try channel.finish()
        let completions = CountingListener()
        EventLoopWriteBatcher(eventLoop: loop).write([OutboundText("late")], to: output, receipt: WriteReceipt(completions, frames: 1, bytes: 0))
        loop.run()
        #expect(completions.count == 1)
    }

    @Test(
        "a socket's FrameTarget, attached at its first frames, lets go of the encoder's context and the channel when the pipeline goes; later frames are reported done, not written"
    )
    func targetAfterClose() throws {
        let loop = EmbeddedEventLoop()
        let target = FrameTarget()
        let channel = try socket(loop, below: target)
        let output = FrameOutput(channel: channel)
        let batcher = EventLoopWriteBatcher(eventLoop: loop)
        let completions = CountingListener()
        batcher.write([OutboundText("first")], to: output, receipt: WriteReceipt(completions, frames: 1, bytes: 5))
        loop.run()
        #expect(try texts(channel) == ["first"])
        #expect(target.encoder != nil && completions.count == 1)
        _ = try channel.finish()
        #expect(target.encoder == nil && target.transport == nil)
        batcher.write([OutboundText("late")], to: output, receipt: WriteReceipt(completions, frames: 1, bytes: 4))
        loop.run()
        #expect(completions.count == 2 && completions.frames == 2 && completions.bytes == 9)
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
    }

    @Test("frames on the channel count against the bound until written; no progress for too long is a stall")
    func accounting() {
        var queue = OutboundQueue(maxBytes: 100, maxFrames: 3)
        #expect(queue.accepts(frames: 1, bytes: 40))
        queue.handedToChannel(frames: 1, bytes: 40)
        queue.handedToChannel(frames: 1, bytes: 40)
        // 80 of 100 bytes unwritten: another 40 does not fit; nor does a fourth frame.
        #expect(!queue.accepts(frames: 1, bytes: 40))
        #expect(queue.accepts(frames: 1, bytes: 1))
        #expect(!queue.accepts(frames: 2, bytes: 2))
        let started = ContinuousClock.now
        #expect(queue.isStalled(now: started + .seconds(60), timeout: .seconds(10)))
        queue.channelWrote(frames: 1, bytes: 40)
        #expect(queue.accepts(frames: 1, bytes: 40))
        queue.channelWrote(frames: 1, bytes: 40)
        // Nothing outstanding: never stalled, whatever the time.
        #expect(!queue.isStalled(now: started + .seconds(3600), timeout: .seconds(10)))
        #expect(queue.bytes == 0 && queue.framesOnChannel == 0)
    }

    @Test(
        "a native or STOMP connection whose client stops reading: bounded by unwritten bytes, stalled after the write timeout, dropped by closeNow, closed with its own code"
    )
    func liveConnectionOnAStuckSocket() async throws {
        let closes = Mutex<[String]>([])
        var closing: Task<Void, Never>?
        // Everything embedded is made, used and released in this block, before the await: after
        // it the test may run on another thread, and an embedded loop or channel may be used (and
        // deinitialised) only on the thread that made it.
        do {
            let loop = EmbeddedEventLoop()
            let stuck = StuckSocket()
            let channel = try socket(loop, below: stuck)
            let aborted = Mutex(0)
            let connection = LiveConnection(maxQueuedFrames: 100, maxQueuedBytes: 100, abort: { aborted.withLock { $0 += 1 } })
            #expect(connection.send(String(repeating: "a", count: 20)))  // before the WebSocket is attached: queued
            connection.attach(
                ChannelWriter(channel: channel, batcher: EventLoopWriteBatcher(eventLoop: loop)) { code, reason in
                    closes.withLock { $0.append("\(code) \(reason ?? "")") }
                })
            #expect(connection.send(String(repeating: "b", count: 60)))
            loop.run()
            // Both reached the channel, in order, and neither is written: 80 of 100 bytes outstanding.
            #expect(stuck.seen.map { String(buffer: $0.getSlice(at: 2, length: 1) ?? ByteBuffer()) } == ["a", "b"])
            #expect(!connection.send(String(repeating: "c", count: 30)))
            let started = ContinuousClock.now
            #expect(connection.health(now: started + .seconds(60), interval: .seconds(3600), writeTimeout: .seconds(10)) == .stalled)
            // The client reads again: the bound frees up, no stall.
            stuck.release()
            #expect(connection.health(now: started + .seconds(60), interval: .seconds(3600), writeTimeout: .seconds(10)) != .stalled)
            #expect(connection.send(String(repeating: "c", count: 30)))
            loop.run()
            #expect(stuck.seen.count == 1)
            // Too far behind while a write is outstanding: the queue is dropped and so is the TCP connection.
            connection.closeNow(code: 1008, reason: "too far behind")
            #expect(aborted.withLock { $0 } == 1)
            #expect(!connection.send("d"))
            stuck.release()
            _ = try? channel.finish()
            closing = connection.closeTask
        }
        await closing?.value
        #expect(closes.withLock { $0 } == ["1008 too far behind"])
    }

    @Test("while held (a poll's deliveries), writes wait without a drain; the last release drains them all at once, in order")
    func holdAndRelease() throws {
        let loop = EmbeddedEventLoop()
        let a = try socket(loop)
        let batchers = EventLoopWriteBatchers()
        let batcher = batchers.batcher(for: loop)
        let output = FrameOutput(channel: a)
        batchers.holding {
            batcher.write([OutboundText("1")], to: output, receipt: nil)
            batcher.hold()  // nested: only the outer release drains
            batcher.write([OutboundText("2")], to: output, receipt: nil)
            batcher.release()
            loop.run()
            #expect((try? texts(a)) == [], "nothing is drained during the hold")
            batcher.write([OutboundText("3")], to: output, receipt: nil)
        }
        loop.run()
        #expect(try texts(a) == ["1", "2", "3"])
        // A hold with nothing written queues nothing; writes after it drain as before.
        batchers.holding {}
        batcher.write([OutboundText("4")], to: output, receipt: nil)
        loop.run()
        #expect(try texts(a) == ["4"])
        _ = try a.finish()
    }

    @Test("a close during a hold drains the frames queued before it at once: the close frame cannot overtake them")
    func closeDuringHold() async throws {
        let closes = Mutex<[String]>([])
        let task: Task<Void, Never>
        do {  // the embedded loop and channel made, used and released before the await
            let loop = EmbeddedEventLoop()
            let channel = try socket(loop)
            let batchers = EventLoopWriteBatchers()
            let writer = ChannelWriter(channel: channel, batcher: batchers.batcher(for: loop)) { code, _ in
                closes.withLock { $0.append("\(code)") }
            }
            task = batchers.holding { () -> Task<Void, Never> in
                writer.write([OutboundText("last words")], receipt: nil)
                let task = writer.close(code: 1008, reason: nil)
                loop.run()
                #expect((try? texts(channel)) == ["last words"], "drained before the hold ends")
                return task
            }
            _ = try channel.finish()
        }
        await task.value
        #expect(closes.withLock { $0 } == ["1008"])
    }

    @Test("a close asked for before the WebSocket is attached is sent once it is, after the frames queued before it")
    func closeBeforeAttach() async throws {
        let closes = Mutex<[String]>([])
        var closing: Task<Void, Never>?
        do {  // the embedded loop and channel made, used and released before the await
            let loop = EmbeddedEventLoop()
            let channel = try socket(loop)
            let connection = LiveConnection(maxQueuedFrames: 100, maxQueuedBytes: 1 << 20)
            #expect(connection.send("hello"))
            connection.close(code: 4004, reason: "authentication failed")
            #expect(connection.closeTask == nil)
            connection.attach(
                ChannelWriter(channel: channel, batcher: EventLoopWriteBatcher(eventLoop: loop)) { code, reason in
                    closes.withLock { $0.append("\(code) \(reason ?? "")") }
                })
            loop.run()
            #expect(try texts(channel) == ["hello"])
            _ = try channel.finish()
            closing = connection.closeTask
        }
        await closing?.value
        #expect(closes.withLock { $0 } == ["4004 authentication failed"])
    }
}

/// A socket whose client stopped reading: bytes written to it wait in the channel (as in NIO's
/// pending writes when the kernel's buffer is full) until `release()` lets what waits so far go.
private final class StuckSocket: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    /// The frames' bytes that reached the socket since the last release (empty writes left out).
    private(set) var seen: [ByteBuffer] = []
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let bytes = unwrapOutboundIn(data)
        if bytes.readableBytes > 0 { seen.append(bytes) }
        context.write(data, promise: promise)
    }

    /// Held: nothing is written until `release()`.
    func flush(context: ChannelHandlerContext) {}

    func release() {
        seen = []
        context?.flush()
    }
}

/// Server frames (unmasked, RFC 6455 §5.2) read back from the bytes a socket was sent.
enum ServerFrames {
    struct Frame {
        var fin: Bool
        var opcode: UInt8
        var payload: ByteBuffer
    }

    struct Malformed: Error {}

    static func parse(_ wire: inout ByteBuffer) throws -> [Frame] {
        var frames: [Frame] = []
        while wire.readableBytes > 0 {
            guard let first = wire.readInteger(as: UInt8.self), let second = wire.readInteger(as: UInt8.self), second & 0x80 == 0 else {
                throw Malformed()
            }
            var length = Int(second & 0x7F)
            if length == 126 {
                guard let long = wire.readInteger(as: UInt16.self) else { throw Malformed() }
                length = Int(long)
            } else if length == 127 {
                guard let long = wire.readInteger(as: UInt64.self), let count = Int(exactly: long) else { throw Malformed() }
                length = count
            }
            guard let payload = wire.readSlice(length: length) else { throw Malformed() }
            frames.append(Frame(fin: first & 0x80 != 0, opcode: first & 0x0F, payload: payload))
        }
        return frames
    }
}

/// Counts the receipts delivered to it.
final class CountingListener: ChannelWriteListener {
    private let delivered = Mutex((count: 0, frames: 0, bytes: 0))
    var count: Int { delivered.withLock { $0.count } }
    var frames: Int { delivered.withLock { $0.frames } }
    var bytes: Int { delivered.withLock { $0.bytes } }
    func channelWrote(frames: Int, bytes: Int) {
        delivered.withLock {
            $0.count += 1
            $0.frames += frames
            $0.bytes += bytes
        }
    }
}
