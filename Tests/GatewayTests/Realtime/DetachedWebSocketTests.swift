import NIOCore
import NIOEmbedded
import NIOWebSocket
import Synchronization
import Testing
import TestSupport

@testable import GatewayApp

/// The task-free WebSocket path (`RealtimeChildChannel`): the first request head is read before
/// the pipeline is chosen, and a detached socket's frames are handled by a NIO handler that runs
/// client messages in order in a task only while some are pending.
@Suite("WebSocket connections without a task per socket")
struct DetachedWebSocketTests {
    // MARK: request heads

    @Test("a request head's method, target and upgrade ask are read; partial or malformed heads are not")
    func preview() {
        let head = "GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: x\r\nUPGRADE: WebSocket\r\nConnection: Upgrade\r\n\r\n"
        let preview = RequestHeadPreview(Substring(head))
        #expect(preview?.method == "GET")
        #expect(preview?.target == "/socket.io/?EIO=4&transport=websocket")
        #expect(preview?.asksForWebSocket == true)
        #expect(RequestHeadPreview("POST /v1/chats HTTP/1.1\r\nContent-Length: 3\r\n\r\n")?.asksForWebSocket == false)
        #expect(RequestHeadPreview("GET /x\r\n\r\n") == nil)
        #expect(RequestHeadPreview("GET x HTTP/1.1\r\n\r\n") == nil)
        #expect(RequestHeadPreview("\u{0}\u{1} garbage") == nil)
        #expect(RequestHeadSniffer.endOfHead(ByteBuffer(string: "GET / HTTP/1.1\r\nA: b\r\n\r\nbody").readableBytesView) == 24)
        #expect(RequestHeadSniffer.endOfHead(ByteBuffer(string: "GET / HTTP/1.1\r\nA: b\r\n").readableBytesView) == nil)
    }

    /// Records what reaches the handlers after the sniffer.
    private final class Recorder: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let received = Mutex<[String]>([])
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let text = String(buffer: unwrapInboundIn(data))
            received.withLock { $0.append(text) }
        }
    }

    @Test("the sniffer waits for the whole head, lets the choice configure the pipeline, replays every byte into it and leaves")
    func sniffer() throws {
        let channel = EmbeddedChannel()
        let recorder = Recorder()
        let chosen = Mutex<[RequestHeadPreview?]>([])
        let sniffer = RequestHeadSniffer(maxHeadBytes: 1024) { preview, pipeline in
            chosen.withLock { $0.append(preview) }
            try pipeline.addHandler(recorder)
            return {}
        } onFailure: { _ in
        }
        try channel.pipeline.syncOperations.addHandler(sniffer)
        try channel.writeInbound(ByteBuffer(string: "GET /socket.io/?EIO=4 HTTP/1.1\r\nUpgrade: websocket\r\n"))
        #expect(chosen.withLock { $0 }.isEmpty)
        try channel.writeInbound(ByteBuffer(string: "\r\nafter"))
        try channel.writeInbound(ByteBuffer(string: "later"))
        #expect(chosen.withLock { $0 } == [RequestHeadPreview("GET /socket.io/?EIO=4 HTTP/1.1\r\nUpgrade: websocket\r\n\r\n")])
        #expect(recorder.received.withLock { $0.joined() } == "GET /socket.io/?EIO=4 HTTP/1.1\r\nUpgrade: websocket\r\n\r\nafterlater")
        #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.context(handlerType: RequestHeadSniffer.self) }
        _ = try channel.finish()
    }

    @Test("a head longer than the limit is chosen as unknown (hummingbird's handlers answer it)")
    func longHead() throws {
        let channel = EmbeddedChannel()
        let chosen = Mutex<[RequestHeadPreview?]>([])
        let sniffer = RequestHeadSniffer(maxHeadBytes: 64) { preview, _ in
            chosen.withLock { $0.append(preview) }
            return {}
        } onFailure: { _ in
        }
        try channel.pipeline.syncOperations.addHandler(sniffer)
        try channel.writeInbound(ByteBuffer(string: "GET / HTTP/1.1\r\nX-Pad: \(String(repeating: "x", count: 100))"))
        #expect(chosen.withLock { $0.count } == 1)
        #expect(chosen.withLock { $0.first } == .some(nil))
        _ = try? channel.finish()
    }

    @Test("a client that closes its side before its head is whole is dropped, not kept half-open")
    func halfClosedBeforeHead() throws {
        let channel = EmbeddedChannel()
        let failures = Mutex(0)
        let sniffer = RequestHeadSniffer(maxHeadBytes: 1024) { _, _ in
            Issue.record("nothing to choose from")
            return {}
        } onFailure: { _ in
            failures.withLock { $0 += 1 }
        }
        try channel.pipeline.syncOperations.addHandler(sniffer)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        try channel.writeInbound(ByteBuffer(string: "GET /socket.io/?EIO=4 HTTP/1.1\r\n"))
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(!channel.isActive)
        #expect(failures.withLock { $0 } == 1)
    }

    // MARK: the frame handler

    /// Counts the reads that reach the socket (it sits between the handler and the channel head).
    private final class ReadCounter: ChannelOutboundHandler, Sendable {
        typealias OutboundIn = Any
        let reads = Atomic<Int>(0)
        func read(context: ChannelHandlerContext) {
            reads.add(1, ordering: .relaxed)
            context.read()
        }
    }

    /// Strings recorded from any thread.
    private final class Log: Sendable {
        private let items = Mutex<[String]>([])
        func append(_ item: String) { items.withLock { $0.append(item) } }
        var all: [String] { items.withLock { $0 } }
    }

    private struct Harness {
        let channel: NIOAsyncTestingChannel
        let received: Log
        let events: Log
        let counter: ReadCounter
    }

    /// A handler on a testing channel whose `receive` records and waits for `gate` (when given).
    /// Lets `receive` return one message at a time (when a test holds it).
    private final class Gate: Sendable {
        private let permits = Mutex(0)
        func open() { permits.withLock { $0 += 1 } }
        func pass() async {
            while !permits.withLock({ permits in
                guard permits > 0 else { return false }
                permits -= 1
                return true
            }) {
                try? await Task.sleep(for: .milliseconds(2))
            }
        }
    }

    private func harness(maxBytes: Int = 16, maxPending: Int = 16, gate: Gate? = nil, ownTooLarge: Bool = false) async throws -> Harness {
        let channel = NIOAsyncTestingChannel()
        let received = Log()
        let events = Log()
        let counter = ReadCounter()
        var tooLarge: (@Sendable () -> Void)?
        if ownTooLarge { tooLarge = { events.append("tooLarge") } }
        let callbacks = DetachedWebSocketHandler.Events(
            receive: { text in
                received.append(text)
                await gate?.pass()
                return text != "stop"
            },
            binary: { events.append("binary") },
            tooLarge: tooLarge,
            shutdown: { events.append("shutdown") },
            closed: { events.append("closed") }
        )
        // The handler is not Sendable: it is made and added on the channel's loop, as the
        // gateway's upgrade does.
        try await channel.testingEventLoop.executeInContext {
            try channel.pipeline.syncOperations.addHandler(counter)
            try channel.pipeline.syncOperations.addHandler(
                DetachedWebSocketHandler(maxMessageBytes: maxBytes, maxPendingMessages: maxPending, events: callbacks))
        }
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9))
        return Harness(channel: channel, received: received, events: events, counter: counter)
    }

    private func frame(_ opcode: WebSocketOpcode, _ text: String, fin: Bool = true, rsv1: Bool = false) -> WebSocketFrame {
        WebSocketFrame(fin: fin, rsv1: rsv1, opcode: opcode, data: ByteBuffer(string: text))
    }

    private func closeCode(_ channel: NIOAsyncTestingChannel) async throws -> WebSocketErrorCode? {
        while let frame = try await channel.readOutbound(as: WebSocketFrame.self) {
            if frame.opcode == .connectionClose {
                var data = frame.data
                return data.readWebSocketErrorCode()
            }
        }
        return nil
    }

    @Test("text messages reach receive in order, fragments joined; a ping is answered with its data; binary is reported")
    func messagesAndControl() async throws {
        let h = try await harness()
        try await h.channel.writeInbound(frame(.text, "one"))
        try await h.channel.writeInbound(frame(.text, "tw", fin: false))
        try await h.channel.writeInbound(frame(.ping, "p"))
        try await h.channel.writeInbound(frame(.continuation, "o"))
        try await h.channel.writeInbound(frame(.binary, "b"))
        try await h.channel.writeInbound(frame(.text, "three"))
        try await Eventually.wait("three messages") { h.received.all.count == 3 }
        #expect(h.received.all == ["one", "two", "three"])
        let pong = try await h.channel.readOutbound(as: WebSocketFrame.self)
        #expect(pong?.opcode == .pong && pong.map { String(buffer: $0.data) } == "p")
        #expect(h.events.all == ["binary"])
        _ = try await h.channel.finish()
        #expect(h.events.all == ["binary", "closed"])
    }

    @Test("over the limit (whole or in fragments) closes with 1009; a stray continuation or a reserved bit with 1002")
    func violations() async throws {
        for (frames, code) in [
            ([frame(.text, String(repeating: "x", count: 17))], WebSocketErrorCode.messageTooLarge),
            // The limit is bytes: 6 Hangul syllables are 6 characters but 18 bytes.
            ([frame(.text, "가나다라마바")], .messageTooLarge),
            ([frame(.text, "0123456789", fin: false), frame(.continuation, "0123456789")], .messageTooLarge),
            ([frame(.continuation, "x")], .protocolError),
            ([frame(.text, "x", rsv1: true)], .protocolError),
        ] {
            let h = try await harness()
            for frame in frames { try await h.channel.writeInbound(frame) }
            #expect(try await closeCode(h.channel) == code, "\(frames.map(\.opcode))")
            // Nothing after the close frame is handled.
            _ = try? await h.channel.writeInbound(frame(.text, "late"))
            try await Task.sleep(for: .milliseconds(50))
            #expect(h.received.all.isEmpty)
            _ = try? await h.channel.finish()
        }
    }

    @Test("a client's close is answered with its code; receive returning false ends the connection; shutdown is heard")
    func closing() async throws {
        let h = try await harness()
        var data = ByteBuffer()
        data.write(webSocketErrorCode: .goingAway)
        try await h.channel.writeInbound(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))
        #expect(try await closeCode(h.channel) == .goingAway)
        _ = try? await h.channel.finish()

        let stopping = try await harness()
        try await stopping.channel.writeInbound(frame(.text, "stop"))
        try await stopping.channel.writeInbound(frame(.text, "after"))
        // The protocol closes the connection itself; one it left open is dropped after the grace period.
        try await Eventually.wait("stop handled") { stopping.received.all.first == "stop" }
        try await Task.sleep(for: .milliseconds(50))
        #expect(stopping.channel.isActive)
        await stopping.channel.testingEventLoop.advanceTime(by: DetachedWebSocketHandler.closeGrace)
        try await Eventually.wait("the channel closes after the grace period") { !stopping.channel.isActive }
        #expect(stopping.received.all.first == "stop")
        #expect(!stopping.received.all.contains("after") || stopping.received.all == ["stop", "after"])
        #expect(stopping.events.all == ["closed"])

        let quiescing = try await harness()
        quiescing.channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        try await Eventually.wait("shutdown heard") { quiescing.events.all == ["shutdown"] }
        // The protocol did not close it (a test stand-in): the server's shutdown still ends it.
        #expect(quiescing.channel.isActive)
        await quiescing.channel.testingEventLoop.advanceTime(by: DetachedWebSocketHandler.closeGrace)
        try await Eventually.wait("closed after the grace period") { quiescing.events.all == ["shutdown", "closed"] }
    }

    @Test("the server's close waits for the client's close (at most the grace period); a protocol may refuse a large message itself")
    func closeHandshake() async throws {
        // A protocol's close frame, written as `sendClose` writes it: the connection stays open
        // for the client's answer, and closes once it comes.
        let answered = try await harness()
        try await answered.channel.writeAndFlush(DetachedWebSocketHandler.closeFrame(.init(codeNumber: 4008), reason: "bye", allocator: .init()))
        #expect(try await closeCode(answered.channel) == .init(codeNumber: 4008))
        #expect(answered.channel.isActive)
        try await answered.channel.writeInbound(frame(.text, "late"))
        var data = ByteBuffer()
        data.write(webSocketErrorCode: .init(codeNumber: 4008))
        try await answered.channel.writeInbound(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))
        try await Eventually.wait("closed once the client answered") { !answered.channel.isActive }
        #expect(answered.received.all.isEmpty)
        #expect(try await answered.channel.readOutbound(as: WebSocketFrame.self) == nil, "the client's close is not answered twice")

        // A client that never answers is dropped after the grace period.
        let silent = try await harness()
        try await silent.channel.writeInbound(frame(.continuation, "stray"))
        #expect(try await closeCode(silent.channel) == .protocolError)
        await silent.channel.testingEventLoop.advanceTime(by: DetachedWebSocketHandler.closeGrace - .milliseconds(1))
        #expect(silent.channel.isActive)
        await silent.channel.testingEventLoop.advanceTime(by: .milliseconds(1))
        try await Eventually.wait("dropped after the grace period") { !silent.channel.isActive }

        // A protocol that refuses a large message in its own terms hears of it; no 1009 from here.
        let own = try await harness(ownTooLarge: true)
        try await own.channel.writeInbound(frame(.text, String(repeating: "x", count: 17)))
        try await own.channel.writeInbound(frame(.text, "after"))
        #expect(own.events.all == ["tooLarge"])
        #expect(try await own.channel.readOutbound(as: WebSocketFrame.self) == nil)
        try await Task.sleep(for: .milliseconds(50))
        #expect(own.received.all.isEmpty)
        _ = try? await own.channel.finish()
    }

    @Test("a client that closes its side (TCP half-close, allowed by the server) ends the connection at once")
    func halfClosed() async throws {
        let h = try await harness()
        h.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        try await Eventually.wait("closed") { !h.channel.isActive }
        try await Eventually.wait("closed is heard") { h.events.all == ["closed"] }
    }

    @Test("while the pending messages reach the limit no read reaches the socket; reads resume once they drain")
    func backPressure() async throws {
        let gate = Gate()
        let h = try await harness(maxPending: 2, gate: gate)
        for index in 0..<3 { try await h.channel.writeInbound(frame(.text, "m\(index)")) }
        // m0 is being handled (waiting at the gate); m1 and m2 are pending: the limit.
        try await Eventually.wait("m0 in receive") { h.received.all.count == 1 }
        let before = h.counter.reads.load(ordering: .relaxed)
        h.channel.pipeline.read()
        try await Task.sleep(for: .milliseconds(50))
        #expect(h.counter.reads.load(ordering: .relaxed) == before, "a read while 2 messages wait is held")
        gate.open()
        try await Eventually.wait("the held read goes out once one drained") { h.counter.reads.load(ordering: .relaxed) == before + 1 }
        gate.open()
        gate.open()
        try await Eventually.wait("all three handled") { h.received.all.count == 3 }
        #expect(h.received.all == ["m0", "m1", "m2"])
        _ = try? await h.channel.finish()
    }
}
