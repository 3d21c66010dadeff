import Common
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// One WebSocket of the run, opened with NIO directly: an HTTP/1.1 upgrade, then
/// `LoadGenFrameHandler` runs the socket's `LoadGenConversation` on the connection's event loop.
/// A received frame is timed and recorded where NIO reads it, with no task to resume.
enum LoadGenConnection {
    /// Where a WebSocket URL (`ws://host:port/path?query`) points.
    struct Target: Sendable, Equatable {
        /// What to connect to: a name or an address, an IPv6 literal without its brackets.
        let host: String
        let port: Int
        /// Path and query.
        let uri: String

        init(host: String, port: Int, uri: String) {
            self.host = host
            self.port = port
            self.uri = uri
        }

        /// nil for anything but `ws://` (the generator speaks no TLS) or a malformed authority.
        init?(url: String) {
            guard url.hasPrefix("ws://") else { return nil }
            let rest = url.dropFirst("ws://".count)
            let authority = rest.prefix { $0 != "/" && $0 != "?" }
            let uri = String(rest.dropFirst(authority.count))
            let host: Substring
            let portText: Substring?
            if authority.hasPrefix("[") {
                // An IPv6 literal: `[::1]` or `[::1]:8080`.
                guard let close = authority.firstIndex(of: "]") else { return nil }
                host = authority[authority.index(after: authority.startIndex)..<close]
                let after = authority[authority.index(after: close)...]
                guard after.isEmpty || after.hasPrefix(":") else { return nil }
                portText = after.isEmpty ? nil : after.dropFirst()
            } else if let colon = authority.lastIndex(of: ":") {
                host = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            } else {
                host = authority
                portText = nil
            }
            var port = 80
            if let portText {
                guard let p = Int(portText), (1...65535).contains(p) else { return nil }
                port = p
            }
            guard !host.isEmpty, !host.contains(":") || authority.hasPrefix("[") else { return nil }
            self.host = String(host)
            self.port = port
            self.uri = uri.isEmpty ? "/" : (uri.hasPrefix("?") ? "/" + uri : uri)
        }

        /// The `Host` header: an IPv6 literal in brackets.
        var hostHeader: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// The server answered the upgrade request with something else than 101.
    struct UpgradeRefused: Error {}

    /// How a socket ended: the server's close frame, or the error that ended it.
    final class Outcome: Sendable {
        private let state = Locked<(code: UInt16?, reason: String?, error: LoadGenProtocolError?)>((nil, nil, nil))

        func closedByServer(code: UInt16?, reason: String?) {
            state.withLock {
                $0.code = code; $0.reason = reason
            }
        }
        func failed(_ error: LoadGenProtocolError) { state.withLock { if $0.error == nil { $0.error = error } } }

        var serverClose: (code: UInt16?, reason: String?)? {
            let s = state.value
            return s.code == nil && s.reason == nil ? nil : (s.code, s.reason)
        }
        var error: LoadGenProtocolError? { state.value.error }
    }

    /// Asks a socket's handler to close it (the run is over).
    struct Stop: Sendable {}

    private enum Upgrade: Sendable {
        case upgraded(any Channel)
        case refused
    }

    /// Opens the WebSocket; returns its channel once upgraded (the conversation runs from then
    /// on), or throws. Cancelling the task closes a connection still waiting for its upgrade.
    static func open(
        _ target: Target, conversation: @escaping @Sendable () -> LoadGenConversation, outcome: Outcome, maxFrameSize: Int = 1 << 20
    ) async throws -> any Channel {
        let connection = Locked<(any Channel)?>(nil)
        let upgrade = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(10))
            .connect(host: target.host, port: target.port) { channel in
                connection.withLock { $0 = channel }
                return channel.eventLoop.makeCompletedFuture {
                    let upgrader = NIOTypedWebSocketClientUpgrader<Upgrade>(maxFrameSize: maxFrameSize) { channel, _ in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(LoadGenFrameHandler(conversation: conversation(), outcome: outcome))
                            return Upgrade.upgraded(channel)
                        }
                    }
                    var headers = HTTPHeaders()
                    headers.add(name: "Host", value: target.hostHeader)
                    let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: target.uri, headers: headers)
                    let configuration = NIOTypedHTTPClientUpgradeConfiguration<Upgrade>(
                        upgradeRequestHead: head, upgraders: [upgrader],
                        notUpgradingCompletionHandler: { channel in
                            channel.eventLoop.makeCompletedFuture {
                                channel.close(promise: nil)
                                return Upgrade.refused
                            }
                        })
                    var pipeline = NIOUpgradableHTTPClientPipelineConfiguration(upgradeConfiguration: configuration)
                    // A server that speaks first (Socket.IO's open packet, the native hello) may send
                    // its first frame in the same read as the 101: those bytes are the WebSocket's.
                    pipeline.leftOverBytesStrategy = .forwardBytes
                    return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(configuration: pipeline)
                }
            }
        let result = try await withTaskCancellationHandler {
            try await upgrade.get()
        } onCancel: {
            connection.withLock { $0 }?.close(promise: nil)
        }
        switch result {
        case .upgraded(let channel): return channel
        case .refused: throw UpgradeRefused()
        }
    }
}

/// Runs a socket's conversation on its event loop: joins fragments into messages, answers
/// WebSocket pings, sends what the conversation asks for (masked, as a client must), beats the
/// native heartbeat, and closes with a close frame when the run stops.
final class LoadGenFrameHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let conversation: LoadGenConversation
    private let outcome: LoadGenConnection.Outcome
    /// A message's first fragments, until its last.
    private var fragments: ByteBuffer?
    private var heartbeat: Scheduled<Void>?
    private var closing = false
    private var started = false

    init(conversation: LoadGenConversation, outcome: LoadGenConnection.Outcome) {
        self.conversation = conversation
        self.outcome = outcome
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // Added by the upgrade, while NIO's upgrade handler still refuses writes; it forwards them
        // once it passes on what it buffered (which may reach `channelRead` first) or is gone.
        context.eventLoop.assumeIsolated().execute { self.start(context) }
    }

    /// The WebSocket is open: the conversation's first frames.
    private func start(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        perform(context) { try conversation.opened() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        heartbeat?.cancel()
        heartbeat = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        heartbeat?.cancel()
        heartbeat = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        start(context)
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary:
            if frame.fin {
                received(frame.unmaskedData, context: context)
            } else {
                fragments = frame.unmaskedData
            }
        case .continuation:
            guard var buffer = fragments else { return }
            var more = frame.unmaskedData
            buffer.writeBuffer(&more)
            if frame.fin {
                fragments = nil
                received(buffer, context: context)
            } else {
                fragments = buffer
            }
        case .ping:
            write(WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData), context: context)
        case .connectionClose:
            var data = frame.unmaskedData
            let code = data.readInteger(as: UInt16.self)
            let reason = data.readableBytes > 0 ? data.readString(length: data.readableBytes) : nil
            if !closing { outcome.closedByServer(code: code, reason: reason) }
            if !closing { sendClose(code: 1000, reason: nil, context: context) }
            context.close(promise: nil)
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is LoadGenConnection.Stop else { return context.fireUserInboundEventTriggered(event) }
        guard !closing, context.channel.isActive else { return }
        closing = true
        sendClose(code: 1000, reason: "load generator done", context: context)
        // The server answers the close frame; if it does not, the socket closes anyway.
        context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(2)) { context.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        outcome.failed(LoadGenProtocolError("\(conversation.spec.kind.rawValue): \(error)"))
        context.close(promise: nil)
    }

    private func received(_ message: ByteBuffer, context: ChannelHandlerContext) {
        let now = monotonicNanos()
        perform(context) { try conversation.received(message, at: now) }
    }

    private func perform(_ context: ChannelHandlerContext, _ step: () throws -> [LoadGenConversation.Action]) {
        let actions: [LoadGenConversation.Action]
        do {
            actions = try step()
        } catch {
            outcome.failed(error as? LoadGenProtocolError ?? LoadGenProtocolError("\(conversation.spec.kind.rawValue): \(error)"))
            context.close(promise: nil)
            return
        }
        for action in actions {
            switch action {
            case .send(let text): write(Self.text(text), context: context, flush: false)
            case .heartbeat(let interval): beat(in: Int.random(in: interval / 2...interval), every: interval, context: context)
            }
        }
        if !actions.isEmpty { context.flush() }
    }

    /// Spreads the heartbeats of thousands of sockets over the interval.
    private func beat(in delay: Int, every interval: Int, context: ChannelHandlerContext) {
        heartbeat = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(delay))) {
            guard context.channel.isActive, !self.closing else { return }
            self.write(Self.text(self.conversation.heartbeatFrame), context: context)
            self.beat(in: interval, every: interval, context: context)
        }
    }

    private func sendClose(code: UInt16, reason: String?, context: ChannelHandlerContext) {
        var data = context.channel.allocator.buffer(capacity: 2 + (reason?.utf8.count ?? 0))
        data.writeInteger(code)
        if let reason { data.writeString(reason) }
        write(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: data), context: context)
    }

    private func write(_ frame: WebSocketFrame, context: ChannelHandlerContext, flush: Bool = true) {
        if flush {
            context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        } else {
            context.write(wrapOutboundOut(frame), promise: nil)
        }
    }

    private static func text(_ text: String) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: ByteBuffer(string: text))
    }
}
