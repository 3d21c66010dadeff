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
}
