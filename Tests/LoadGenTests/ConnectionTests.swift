import Common
import Crypto
import Events
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization
import Testing

@testable import LoadGen

/// The generator's NIO WebSocket client against a real WebSocket server (NIO's upgrader) that,
/// like the gateway, speaks first: its Socket.IO open packet may share a read with the 101.
@Suite("Load generator sockets: the NIO client against a real WebSocket server")
struct ConnectionTests {
    /// What the server saw of its one client.
    final class Seen: Sendable {
        let texts = Mutex<[String]>([])
        let unmasked = Mutex(0)
        let closeCode = Mutex<UInt16?>(nil)
    }

    /// A Socket.IO server in miniature: the open packet at once, an ack per namespace followed by
    /// a measured message and an Engine.IO ping; a close frame is answered and ends the socket.
    final class ServerHandler: ChannelInboundHandler {
        typealias InboundIn = WebSocketFrame
        typealias OutboundOut = WebSocketFrame
        static let open = #"0{"sid":"s1","pingInterval":25000}"#
        let seen: Seen
        let greets: Bool
        init(seen: Seen, greets: Bool = true) {
            self.seen = seen
            self.greets = greets
        }

        func handlerAdded(context: ChannelHandlerContext) { if greets { send(Self.open, context) } }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            if frame.maskKey == nil { seen.unmasked.withLock { $0 += 1 } }
            switch frame.opcode {
            case .text:
                let text = String(buffer: frame.unmaskedData)
                seen.texts.withLock { $0.append(text) }
                if text.hasPrefix("40/") {
                    let namespace = text.dropLast()  // the trailing comma
                    send("\(namespace),{\"sid\":\"n1\"}", context)
                    send("42\(namespace.dropFirst(2)),[\"channel\",{\"content\":\"lg RUN-7\"}]", context)
                    send("2", context)
                }
            case .connectionClose:
                var data = frame.unmaskedData
                seen.closeCode.withLock { $0 = data.readInteger(as: UInt16.self) }
                var reply = context.channel.allocator.buffer(capacity: 2)
                reply.writeInteger(UInt16(1000))
                context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: reply)))
                    .assumeIsolated().whenComplete { _ in context.close(promise: nil) }
            default:
                break
            }
        }

        private func send(_ text: String, _ context: ChannelHandlerContext) {
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: text))), promise: nil)
        }
    }

    static func server(_ seen: Seen) async throws -> any Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                let upgrader = NIOWebSocketServerUpgrader(
                    shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture(HTTPHeaders()) },
                    upgradePipelineHandler: { channel, _ in
                        channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(ServerHandler(seen: seen)) }
                    })
                return channel.pipeline.configureHTTPServerPipeline(withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    /// The upgrade by hand, so the 101 and the open packet leave in one write (one read at the
    /// client), as they may from the gateway.
    final class CoalescingUpgrade: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let seen: Seen
        var request = ""
        init(seen: Seen) { self.seen = seen }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            request += String(buffer: unwrapInboundIn(data))
            guard request.contains("\r\n\r\n") else { return }
            let key =
                request.split(separator: "\r\n").first { $0.lowercased().hasPrefix("sec-websocket-key:") }
                .map { $0.dropFirst("sec-websocket-key:".count).trimmingCharacters(in: .whitespaces) } ?? ""
            let accept = Data(Insecure.SHA1.hash(data: Data((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))).base64EncodedString()
            var out = ByteBuffer(
                string: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(accept)\r\n\r\n")
            out.writeBytes([0x81, UInt8(ServerHandler.open.utf8.count)])
            out.writeString(ServerHandler.open)
            context.writeAndFlush(wrapOutboundOut(out), promise: nil)
            let pipeline = context.pipeline.syncOperations
            try? pipeline.addHandler(WebSocketFrameEncoder())
            try? pipeline.addHandler(ByteToMessageHandler(WebSocketFrameDecoder()))
            try? pipeline.addHandler(ServerHandler(seen: seen, greets: false))
            pipeline.removeHandler(self, promise: nil)
        }
    }

    static func coalescingServer(_ seen: Seen) async throws -> any Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(CoalescingUpgrade(seen: seen)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    @Test("a ws:// URL gives host, port and path; an IPv6 literal connects without its brackets and keeps them in Host")
    func targets() throws {
        let plain = try #require(LoadGenConnection.Target(url: "ws://127.0.0.1:8180/socket.io/?EIO=4"))
        #expect(plain == LoadGenConnection.Target(host: "127.0.0.1", port: 8180, uri: "/socket.io/?EIO=4"))
        #expect(plain.hostHeader == "127.0.0.1:8180")
        let named = try #require(LoadGenConnection.Target(url: "ws://gateway?x=1"))
        #expect(named == LoadGenConnection.Target(host: "gateway", port: 80, uri: "/?x=1"))
        let v6 = try #require(LoadGenConnection.Target(url: "ws://[::1]:8180/v1/gateway"))
        #expect(v6 == LoadGenConnection.Target(host: "::1", port: 8180, uri: "/v1/gateway"))
        #expect(v6.hostHeader == "[::1]:8180")
        #expect(LoadGenConnection.Target(url: "ws://[fe80::1]")?.port == 80)
        for bad in ["wss://h/", "http://h/", "ws://", "ws://:80/", "ws://h:0/", "ws://h:x/", "ws://[::1/", "ws://[::1]x/", "ws://::1/"] {
            #expect(LoadGenConnection.Target(url: bad) == nil, "\(bad)")
        }
    }

    @Test(
        "handshake, a recorded delivery, a ping answered, every frame masked, and a 1000 close when the run stops",
        arguments: [false, true])
    func socketIOAgainstAServer(openPacketWithThe101: Bool) async throws {
        let seen = Seen()
        let server = try await openPacketWithThe101 ? Self.coalescingServer(seen) : Self.server(seen)
        defer { server.close(promise: nil) }
        let port = try #require(server.localAddress?.port)
        let channelId = ChannelID.generate()
        let log = DeliveryLog(expected: 4)
        let handshake = HandshakeState(gate: AsyncGate(permits: 1))
        let spec = LoadGenSocketSpec(index: 0, kind: .socketio, token: "", channels: [(index: 0, id: channelId)])
        let target = try #require(LoadGenConnection.Target(url: "ws://127.0.0.1:\(port)/socket.io/?EIO=4&transport=websocket"))
        let outcome = LoadGenConnection.Outcome()
        let client = try await LoadGenConnection.open(
            target, conversation: { LoadGenConversation(spec: spec, markers: DeliveryMarkers(runId: "RUN"), log: log, handshake: handshake) },
            outcome: outcome)

        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, log.deliveryCount < 1 || !seen.texts.withLock({ $0.contains("3") }) {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(log.socketEvents.ready == 1)
        #expect(log.allDeliveries.map(\.message) == [7])
        #expect(seen.texts.withLock { $0 } == ["40/ws-channel-\(channelId),", "3"])

        client.pipeline.fireUserInboundEventTriggered(LoadGenConnection.Stop())
        try await client.closeFuture.get()
        #expect(seen.closeCode.withLock { $0 } == 1000)
        #expect(seen.unmasked.withLock { $0 } == 0)
        #expect(outcome.error == nil)
        #expect(outcome.serverClose == nil)  // the client closed; the server only answered
    }

    @Test("a server that refuses the upgrade is reported as such")
    func refused() async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                let upgrader = NIOWebSocketServerUpgrader(
                    shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture(nil) },
                    upgradePipelineHandler: { channel, _ in channel.eventLoop.makeSucceededVoidFuture() })
                return channel.pipeline.configureHTTPServerPipeline(withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
                    .flatMapThrowing { try channel.pipeline.syncOperations.addHandler(Forbidden()) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { server.close(promise: nil) }
        let port = try #require(server.localAddress?.port)
        let spec = LoadGenSocketSpec(index: 0, kind: .native, token: "t", channels: [])
        let log = DeliveryLog(expected: 1)
        await #expect(throws: LoadGenConnection.UpgradeRefused.self) {
            _ = try await LoadGenConnection.open(
                LoadGenConnection.Target(url: "ws://127.0.0.1:\(port)/v1/gateway")!,
                conversation: {
                    LoadGenConversation(spec: spec, markers: DeliveryMarkers(runId: "R"), log: log, handshake: HandshakeState(gate: AsyncGate(permits: 1)))
                }, outcome: LoadGenConnection.Outcome())
        }
    }

    /// Answers every plain HTTP request 403.
    final class Forbidden: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .end = unwrapInboundIn(data) else { return }
            let head = HTTPResponseHead(version: .http1_1, status: .forbidden, headers: ["content-length": "0"])
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }

    @Test("a server that never answers the upgrade: cancelling the socket's task ends the wait")
    func silentServer() async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        defer { server.close(promise: nil) }
        let port = try #require(server.localAddress?.port)
        let spec = LoadGenSocketSpec(index: 0, kind: .socketio, token: "", channels: [])
        let log = DeliveryLog(expected: 1)
        let task = Task {
            try await LoadGenConnection.open(
                try #require(LoadGenConnection.Target(url: "ws://127.0.0.1:\(port)/socket.io/")),
                conversation: {
                    LoadGenConversation(spec: spec, markers: DeliveryMarkers(runId: "R"), log: log, handshake: HandshakeState(gate: AsyncGate(permits: 1)))
                }, outcome: LoadGenConnection.Outcome())
        }
        try await Task.sleep(for: .milliseconds(200))
        task.cancel()
        let started = ContinuousClock.now
        await #expect(throws: (any Error).self) { _ = try await task.value }
        #expect(ContinuousClock.now - started < .seconds(5))
    }
}
