import HummingbirdWebSocket
import NIOCore
import NIOWebSocket
import Synchronization

/// A WebSocket connection's inbound side as a NIO handler, with no task while the socket is idle:
/// control frames are answered here, fragments joined (`TextReassembly`), and each whole text
/// message goes to `receive` in order, in a short-lived task that exists only while messages are
/// pending (`SerialInbox`), unless the protocol takes it at once here while none is pending (a
/// heartbeat: `Events.immediate`). While `maxPendingMessages` wait, the handler stops reading from the
/// socket (TCP back-pressure), as the reading task did before.
final class DetachedWebSocketHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// What the protocol does with the connection.
    struct Events: Sendable {
        /// A whole text message, in order. False: the protocol ended the connection (it sends its
        /// close frame; a connection still open after `closeGrace` is dropped).
        var receive: @Sendable (String) async -> Bool
        /// A whole text message the protocol may take at once, on the loop, without a task (a
        /// heartbeat): true when it did. Asked only when no earlier message is pending or being
        /// handled, so what it answers keeps its place; nil: every message goes to `receive`.
        var immediate: (@Sendable (String) -> Bool)? = nil
        /// A binary message (none of the protocols speaks binary).
        var binary: @Sendable () -> Void
        /// A message over the limit, for a protocol that refuses it in its own terms (it sends
        /// its close; later frames are ignored). nil: the handler closes with 1009.
        var tooLarge: (@Sendable () -> Void)? = nil
        /// The server is shutting down.
        var shutdown: @Sendable () -> Void
        /// The connection ended, for whatever reason (once).
        var closed: @Sendable () -> Void
    }

    /// How long a client has to answer the server's close frame, or to close after the server's
    /// shutdown asked it to (then the connection is dropped).
    static let closeGrace = TimeAmount.seconds(3)

    private let events: Events
    private let maxMessageBytes: Int
    private let maxPendingMessages: Int
    private var reassembly: TextReassembly
    private var inbox: SerialInbox?
    private var readHeld = false
    private var ended = false
    /// A close frame went out: later frames are ignored, and the client's close (the end of the
    /// close handshake) or `closeGrace` closes the connection.
    private var closing = false
    private var storedContext: ChannelHandlerContext?

    init(maxMessageBytes: Int, maxPendingMessages: Int = 16, events: Events) {
        self.events = events
        self.maxMessageBytes = maxMessageBytes
        self.maxPendingMessages = maxPendingMessages
        reassembly = TextReassembly(maxBytes: maxMessageBytes)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        storedContext = context
        let loop = context.eventLoop
        let resume = NIOLoopBound(self, eventLoop: loop)
        let channel = context.channel
        let receive = events.receive
        inbox = SerialInbox(
            process: { text in
                guard await receive(text) else {
                    channel.eventLoop.scheduleTask(in: Self.closeGrace) { channel.close(promise: nil) }
                    return false
                }
                return true
            },
            drained: { pending in
                loop.execute { resume.value.resumeReading(pending: pending) }
            })
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard !closing else {
            // The client answered the server's close: the handshake is over.
            if frame.opcode == .connectionClose { context.close(promise: nil) }
            return
        }
        guard !frame.rsv1, !frame.rsv2, !frame.rsv3 else { return close(context, code: .protocolError) }
        switch frame.opcode {
        case .text, .binary, .continuation:
            let opcode: WebSocketDataFrame.Opcode = frame.opcode == .text ? .text : frame.opcode == .binary ? .binary : .continuation
            switch reassembly.take(opcode, fin: frame.fin, data: frame.unmaskedData) {
            case .text(let text):
                guard text.utf8.count <= maxMessageBytes else { return refuseTooLarge(context) }
                if let immediate = events.immediate, inbox?.isIdle == true, immediate(text) { return }
                inbox?.enqueue(text)
            case .partial: break
            case .binary: events.binary()
            case .tooLarge: refuseTooLarge(context)
            case .violation: close(context, code: .protocolError)
            }
        case .ping:
            guard frame.fin else { return close(context, code: .protocolError) }
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .pong:
            break
        case .connectionClose:
            // The client's close: answer with its code and end the connection.
            var data = frame.unmaskedData
            let code = data.readWebSocketErrorCode() ?? .normalClosure
            closing = true
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(Self.closeFrame(code, reason: nil, allocator: channel.allocator))).whenComplete { _ in
                channel.close(promise: nil)
            }
        default:
            close(context, code: .protocolError)
        }
    }

    func read(context: ChannelHandlerContext) {
        if let inbox, inbox.pending >= maxPendingMessages {
            readHeld = true
            return
        }
        context.read()
    }

    /// The inbox drained to `pending` messages: reads resume below the limit.
    private func resumeReading(pending: Int) {
        guard readHeld, pending < maxPendingMessages, let context = storedContext else { return }
        readHeld = false
        context.read()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        storedContext = nil
        end()
    }

    func channelInactive(context: ChannelHandlerContext) {
        end()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The client closed its side (hummingbird's server allows half-closure, so the channel
        // stays open): nothing more can come, so the connection ends here, not at the heartbeat.
        if let event = event as? ChannelEvent, event == .inputClosed {
            context.close(promise: nil)
            return
        }
        if event is ChannelShouldQuiesceEvent {
            // The protocol sends its close frame; the server's shutdown waits for every
            // connection to close, so one that did not within the grace period is dropped.
            events.shutdown()
            let channel = context.channel
            context.eventLoop.scheduleTask(in: Self.closeGrace) { channel.close(promise: nil) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func end() {
        guard !ended else { return }
        ended = true
        inbox?.stop()
        events.closed()
    }

    private func refuseTooLarge(_ context: ChannelHandlerContext) {
        guard let tooLarge = events.tooLarge else { return close(context, code: .messageTooLarge) }
        closing = true
        tooLarge()
    }

    /// A close frame with `code`; the client's close or `closeGrace` ends the connection.
    private func close(_ context: ChannelHandlerContext, code: WebSocketErrorCode) {
        guard !closing else { return }
        startClosing(context)
        context.writeAndFlush(wrapOutboundOut(Self.closeFrame(code, reason: nil, allocator: context.channel.allocator)), promise: nil)
    }

    /// The protocol's close frame (`sendClose`) passes here on its way out.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if !closing, unwrapOutboundIn(data).opcode == .connectionClose { startClosing(context) }
        context.write(data, promise: promise)
    }

    private func startClosing(_ context: ChannelHandlerContext) {
        closing = true
        let channel = context.channel
        context.eventLoop.scheduleTask(in: Self.closeGrace) { channel.close(promise: nil) }
    }
}

/// A connection's client messages, handled one at a time in order by a task that runs only while
/// some are pending (an idle socket has none).
final class SerialInbox: Sendable {
    private struct State {
        var queue: [String] = []
        var head = 0
        var running = false
        var stopped = false
        var pending: Int { queue.count - head }
    }

    private let state = Mutex(State())
    private let process: @Sendable (String) async -> Bool
    private let drained: @Sendable (Int) -> Void

    /// `process` handles one message (false: stop, dropping the rest); `drained` hears the number
    /// still pending each time one is taken.
    init(process: @escaping @Sendable (String) async -> Bool, drained: @escaping @Sendable (Int) -> Void) {
        self.process = process
        self.drained = drained
    }

    var pending: Int { state.withLock { $0.pending } }

    /// Nothing is pending or being handled (and the inbox was not stopped): a message taken now
    /// elsewhere comes after every earlier one.
    var isIdle: Bool { state.withLock { !$0.running && $0.pending == 0 && !$0.stopped } }

    func enqueue(_ text: String) {
        let start = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.queue.append(text)
            guard !state.running else { return false }
            state.running = true
            return true
        }
        if start { Task { await self.drain() } }
    }

    /// Drops what is pending; nothing more is handled.
    func stop() {
        state.withLock { state in
            state.stopped = true
            state.queue = []
            state.head = 0
        }
    }

    private func drain() async {
        while true {
            let taken = state.withLock { state -> (text: String, pending: Int)? in
                guard !state.stopped, state.head < state.queue.count else {
                    state.running = false
                    state.queue = []
                    state.head = 0
                    return nil
                }
                let next = state.queue[state.head]
                state.head += 1
                if state.head >= 64 {
                    state.queue.removeFirst(state.head)
                    state.head = 0
                }
                return (next, state.pending)
            }
            guard let taken else { return }
            drained(taken.pending)
            guard await process(taken.text) else {
                stop()
                return
            }
        }
    }
}

extension DetachedWebSocketHandler {
    /// Sends a close frame (`code`, `reason`) after what is queued on `channel`; the handler then
    /// waits for the client's close (at most `closeGrace`) and closes the connection.
    static func sendClose(code: UInt16, reason: String?, on channel: any Channel) async {
        let frame = closeFrame(WebSocketErrorCode(codeNumber: Int(code)), reason: reason, allocator: channel.allocator)
        try? await channel.writeAndFlush(frame).get()
    }

    /// Refuses an upgraded connection in the protocol's terms: `frames` (text), then a close frame,
    /// with the close handshake of a handler that hands nothing on. Call on the channel's loop.
    static func refuse(_ channel: any Channel, texts: [[UInt8]] = [], code: WebSocketErrorCode, reason: String) throws {
        let ignore = Events(receive: { _ in false }, binary: {}, shutdown: {}, closed: {})
        try channel.pipeline.syncOperations.addHandler(DetachedWebSocketHandler(maxMessageBytes: 0, events: ignore))
        for text in texts { channel.write(WebSocketFrame(fin: true, opcode: .text, data: channel.allocator.buffer(bytes: text)), promise: nil) }
        channel.writeAndFlush(closeFrame(code, reason: reason, allocator: channel.allocator), promise: nil)
    }

    /// A close frame: the code, then the reason's bytes (if any).
    static func closeFrame(_ code: WebSocketErrorCode, reason: String?, allocator: ByteBufferAllocator) -> WebSocketFrame {
        var data = allocator.buffer(capacity: 2 + (reason?.utf8.count ?? 0))
        data.write(webSocketErrorCode: code)
        if let reason { data.writeString(reason) }
        return WebSocketFrame(fin: true, opcode: .connectionClose, data: data)
    }
}

extension ChannelWriter {
    /// The writer of a detached WebSocket: its close frame goes out after the queued frames, then
    /// the channel closes.
    init(detached channel: any Channel, batchers: EventLoopWriteBatchers) {
        self.init(channel: channel, batcher: batchers.batcher(for: channel.eventLoop)) { code, reason in
            await DetachedWebSocketHandler.sendClose(code: code, reason: reason, on: channel)
        }
    }
}
