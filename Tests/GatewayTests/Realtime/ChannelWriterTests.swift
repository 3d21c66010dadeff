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
    private func texts(_ channel: EmbeddedChannel) throws -> [String] {
        var out: [String] = []
        while let frame = try channel.readOutbound(as: WebSocketFrame.self) {
            #expect(frame.fin && frame.opcode == .text)
            out.append(String(buffer: frame.data))
        }
        return out
    }

    @Test("one drain per loop writes every queued frame in order, per channel, and reports each batch written")
    func batchesPerLoop() throws {
        let loop = EmbeddedEventLoop()
        let a = EmbeddedChannel(loop: loop)
        let b = EmbeddedChannel(loop: loop)
        let batcher = EventLoopWriteBatcher(eventLoop: loop)
        let completions = Mutex<[Bool]>([])
        batcher.write([OutboundText("a1"), OutboundText("a2")], to: a) { ok in completions.withLock { $0.append(ok) } }
        batcher.write([OutboundText("b1")], to: b) { ok in completions.withLock { $0.append(ok) } }
        batcher.write([OutboundText("a3")], to: a, completion: nil)
        // Nothing is written before the loop runs the drain.
        #expect(try texts(a).isEmpty)
        loop.run()
        #expect(try texts(a) == ["a1", "a2", "a3"])
        #expect(try texts(b) == ["b1"])
        #expect(completions.withLock { $0 } == [true, true])
        // A later write schedules a new drain.
        batcher.write([OutboundText("a4")], to: a, completion: nil)
        loop.run()
        #expect(try texts(a) == ["a4"])
        _ = try a.finish()
        _ = try b.finish()
    }

    @Test("a large shared payload goes out as text + continuation fragments around it")
    func sharedPayload() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        let shared = ByteBuffer(repeating: UInt8(ascii: "x"), count: OutboundText.sharingThreshold)
        EventLoopWriteBatcher(eventLoop: loop).write([OutboundText(head: "[", shared: shared, tail: "]")], to: channel, completion: nil)
        loop.run()
        let frames = try (0..<3).compactMap { _ in try channel.readOutbound(as: WebSocketFrame.self) }
        #expect(frames.map(\.opcode) == [.text, .continuation, .continuation])
        #expect(frames.map(\.fin) == [false, false, true])
        #expect(frames.map(\.data.readableBytes) == [1, OutboundText.sharingThreshold, 1])
        _ = try channel.finish()
    }

    @Test("frames on the channel count against the bound until written; no progress for too long is a stall")
    func accounting() {
        var queue = OutboundQueue(maxBytes: 100, maxFrames: 3)
        let frame = [OutboundText(String(repeating: "x", count: 40))]
        #expect(queue.accepts(frame, count: 40))
        queue.handedToChannel(frames: 1, bytes: 40)
        queue.handedToChannel(frames: 1, bytes: 40)
        // 80 of 100 bytes unwritten: another 40 does not fit; nor does a fourth frame.
        #expect(!queue.accepts(frame, count: 40))
        #expect(queue.accepts([OutboundText("y")], count: 1))
        #expect(!queue.accepts([OutboundText("y"), OutboundText("z")], count: 2))
        let started = ContinuousClock.now
        #expect(queue.isStalled(now: started + .seconds(60), timeout: .seconds(10)))
        queue.channelWrote(frames: 1, bytes: 40)
        #expect(queue.accepts(frame, count: 40))
        queue.channelWrote(frames: 1, bytes: 40)
        // Nothing outstanding: never stalled, whatever the time.
        #expect(!queue.isStalled(now: started + .seconds(3600), timeout: .seconds(10)))
        #expect(queue.bytes == 0 && queue.framesOnChannel == 0)
    }

    @Test(
        "a native or STOMP connection whose client stops reading: bounded by unwritten bytes, stalled after the write timeout, dropped by closeNow, closed with its own code"
    )
    func liveConnectionOnAStuckSocket() async throws {
        let loop = EmbeddedEventLoop()
        let socket = StuckSocket()
        let channel = EmbeddedChannel(handler: socket, loop: loop)
        let closes = Mutex<[String]>([])
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
        #expect(socket.held.map { String(buffer: $0.frame.data).first } == ["a", "b"])
        #expect(!connection.send(String(repeating: "c", count: 30)))
        let started = ContinuousClock.now
        #expect(connection.health(now: started + .seconds(60), interval: .seconds(3600), writeTimeout: .seconds(10)) == .stalled)
        // The client reads again: the bound frees up, no stall.
        socket.release()
        #expect(connection.health(now: started + .seconds(60), interval: .seconds(3600), writeTimeout: .seconds(10)) != .stalled)
        #expect(connection.send(String(repeating: "c", count: 30)))
        loop.run()
        #expect(socket.held.count == 1)
        // Too far behind while a write is outstanding: the queue is dropped and so is the TCP connection.
        connection.closeNow(code: 1008, reason: "too far behind")
        await connection.closeTask?.value
        #expect(aborted.withLock { $0 } == 1)
        #expect(closes.withLock { $0 } == ["1008 too far behind"])
        #expect(!connection.send("d"))
        socket.release()
        _ = try? channel.finish()
    }

    @Test("a close asked for before the WebSocket is attached is sent once it is, after the frames queued before it")
    func closeBeforeAttach() async throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        let closes = Mutex<[String]>([])
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
        await connection.closeTask?.value
        #expect(closes.withLock { $0 } == ["4004 authentication failed"])
        _ = try channel.finish()
    }
}

/// A socket whose client stopped reading: writes reach it and are never completed until
/// `release()`.
private final class StuckSocket: ChannelOutboundHandler {
    typealias OutboundIn = WebSocketFrame
    private(set) var held: [(frame: WebSocketFrame, promise: EventLoopPromise<Void>?)] = []

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        held.append((unwrapOutboundIn(data), promise))
    }

    func flush(context: ChannelHandlerContext) {}

    func release() {
        let all = held
        held = []
        for (_, promise) in all { promise?.succeed() }
    }
}
