#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Common
import NIOCore
import NIOPosix
import NIOWebSocket
import SuiteTesting
import Synchronization
import Testing

@testable import GatewayApp

private func closeSocket(_ fd: CInt) { close(fd) }

/// A drain sends a socket's frames straight to its file descriptor when NIO holds nothing for it
/// (`SocketDirectWrite`), and hands NIO whatever the socket did not take: on real TCP connections.
@Suite("Frames sent straight to the socket")
struct SocketDirectWriteTests {
    /// A listening NIO server whose accepted channels have the gateway's frame encoder, and one
    /// plain client socket connected to it.
    final class Connection: Sendable {
        let group: MultiThreadedEventLoopGroup
        let server: any Channel
        let child: any Channel
        let client: CInt

        private init(group: MultiThreadedEventLoopGroup, server: any Channel, child: any Channel, client: CInt) {
            self.group = group
            self.server = server
            self.child = child
            self.client = client
        }

        /// `sendBuffer` and `receiveBuffer` (bytes) make the server's send buffer and the client's
        /// receive buffer small, so a client that does not read fills them quickly.
        static func open(sendBuffer: Int32? = nil, receiveBuffer: Int32? = nil) async throws -> Connection {
            try await open(1, sendBuffer: sendBuffer, receiveBuffer: receiveBuffer)[0]
        }

        /// `count` clients of one server, their accepted channels on the same event loop (closed
        /// together: `close(_:)`).
        static func open(_ count: Int, sendBuffer: Int32? = nil, receiveBuffer: Int32? = nil) async throws -> [Connection] {
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let (accepted, acceptor) = AsyncStream<any Channel>.makeStream()
            var bootstrap = ServerBootstrap(group: group)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(WebSocketFrameEncoder())
                        // As the gateway's upgrade adds it: below the encoder.
                        try channel.pipeline.syncOperations.addHandler(FrameTarget(), position: .first)
                        acceptor.yield(channel)
                    }
                }
            if let sendBuffer { bootstrap = bootstrap.childChannelOption(.socketOption(.so_sndbuf), value: SocketOptionValue(sendBuffer)) }
            let server = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
            let port = try #require(server.localAddress?.port)
            var children = accepted.makeAsyncIterator()
            var connections: [Connection] = []
            for _ in 0..<count {
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                #expect(fd >= 0)
                if var size = receiveBuffer {
                    _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
                }
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = in_port_t(UInt16(port).bigEndian)
                address.sin_addr.s_addr = inet_addr("127.0.0.1")
                let connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
                #expect(connected == 0)
                let child = try #require(await children.next())
                connections.append(Connection(group: group, server: server, child: child, client: fd))
            }
            return connections
        }

        /// The bytes the client has read so far.
        private let wire = Mutex(ByteBuffer())

        /// Reads what the client socket holds now, up to `limit` bytes, without waiting.
        func readSome(limit: Int) {
            var chunk = [UInt8](repeating: 0, count: limit)
            let count = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, CInt(MSG_DONTWAIT)) }
            if count > 0 { wire.withLock { _ = $0.writeBytes(chunk[..<count]) } }
        }

        /// Reads from the client socket until `frames` whole frames arrived (or `timeout`); the
        /// frames, from the first byte the client read.
        func readFrames(_ frames: Int, timeout: Duration = .seconds(10)) throws -> [ServerFrames.Frame] {
            let deadline = ContinuousClock.now + timeout
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while ContinuousClock.now < deadline {
                var copy = wire.withLock { $0 }
                if let parsed = try? ServerFrames.parse(&copy), parsed.count >= frames {
                    wire.withLock { $0.clear() }
                    return parsed
                }
                var ready = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, 100) > 0 else { continue }
                let count = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                wire.withLock { _ = $0.writeBytes(chunk[..<count]) }
            }
            throw TimeoutError(what: "\(frames) frames (\(wire.withLock { $0.readableBytes }) bytes read)")
        }

        /// Closes the client with a reset (SO_LINGER 0), as a peer that vanished.
        func resetClient() {
            var option = linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(client, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
            closeSocket(client)
        }

        func close() async throws {
            try? await child.close()
            try await server.close()
            try await group.shutdownGracefully()
        }

        /// Closes connections made together (`open(_:)`): their channels, then the server and loop.
        static func close(_ connections: [Connection]) async throws {
            for connection in connections { try? await connection.child.close() }
            try await connections.first?.close()
        }
    }

    /// Runs `body` with a connection (`Connection.open`), a write batcher on its loop and the
    /// accepted channel's frame output; then closes both ends.
    static func withOutput(
        sendBuffer: Int32? = nil, receiveBuffer: Int32? = nil,
        _ body: (Connection, EventLoopWriteBatcher, FrameOutput) async throws -> Void
    ) async throws {
        let connection = try await Connection.open(sendBuffer: sendBuffer, receiveBuffer: receiveBuffer)
        let batcher = EventLoopWriteBatcher(eventLoop: connection.child.eventLoop)
        do {
            try await body(connection, batcher, FrameOutput(channel: connection.child))
        } catch {
            closeSocket(connection.client)
            try await connection.close()
            throw error
        }
        closeSocket(connection.client)
        try await connection.close()
    }

    /// Runs a drain for what `body` writes and waits until it ran.
    static func drained(_ batcher: EventLoopWriteBatcher, _ body: () -> Void) async throws {
        batcher.hold()
        body()
        batcher.release()
        try await batcher.eventLoop.submit {}.get()
    }

    /// Runs a drain for what `body` writes right after the client read up to 16 KiB, in the same
    /// turn of the loop: room opens in the socket before NIO has seen it.
    static func drainedAfterReading(_ batcher: EventLoopWriteBatcher, _ connection: Connection, _ body: () -> Void) async throws {
        batcher.hold()
        body()
        try await batcher.eventLoop.submit {
            connection.readSome(limit: 16 * 1024)
            batcher.drain()
        }.get()
        batcher.release()
    }

    static func shared(_ index: Int, bytes: Int) -> OutboundText {
        OutboundText(head: "[\(index):", shared: ByteBuffer(repeating: UInt8(ascii: "a") + UInt8(index % 26), count: bytes), tail: ":\(index)]")
    }

    static func expectedText(_ index: Int, bytes: Int) -> String {
        "[\(index):" + String(repeating: Character(Unicode.Scalar(UInt8(ascii: "a") + UInt8(index % 26))), count: bytes) + ":\(index)]"
    }

    @Test(
        "NIO holding nothing: one drain's frames for a socket go out in one sendmsg, in order, a ping through the pipeline between drains kept in its place; receipts at once"
    )
    func direct() async throws {
        try await Self.withOutput { connection, batcher, output in
            let listener = CountingListener()

            try await Self.drained(batcher) {
                batcher.write([OutboundText("one"), Self.shared(1, bytes: 9_000)], to: output, receipt: WriteReceipt(listener, frames: 2, bytes: 10))
                batcher.write([OutboundText("two")], to: output, receipt: WriteReceipt(listener, frames: 1, bytes: 3))
            }
            #expect(batcher.directWrites.load(ordering: .relaxed) == 1)
            #expect(listener.frames == 3 && listener.bytes == 13, "written at once: reported in the drain")

            try await connection.child.writeAndFlush(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer(string: "p"))).get()
            try await Self.drained(batcher) {
                batcher.write([OutboundText("three")], to: output, receipt: WriteReceipt(listener, frames: 1, bytes: 5))
            }
            #expect(batcher.directWrites.load(ordering: .relaxed) == 2)
            #expect(batcher.partialWrites.load(ordering: .relaxed) == 0)
            #expect(listener.frames == 4)

            let frames = try connection.readFrames(5)
            #expect(frames.map(\.opcode) == [0x1, 0x1, 0x1, 0x9, 0x1])
            #expect(frames.map { String(buffer: $0.payload) } == ["one", Self.expectedText(1, bytes: 9_000), "two", "p", "three"])
        }
    }

    @Test(
        "a client that does not read: the socket takes part of a drain's bytes, NIO the rest and every later frame until it has written them; nothing lost, reordered or reported early"
    )
    func partial() async throws {
        try await Self.withOutput(sendBuffer: 8_192, receiveBuffer: 8_192) { connection, batcher, output in
            let listener = CountingListener()
            let count = 30
            let bytes = 64 * 1024
            try await Self.drained(batcher) { batcher.write([OutboundText("start")], to: output, receipt: nil) }
            #expect(batcher.directWrites.load(ordering: .relaxed) == 1)
            for index in 0..<count {
                // Room opens while NIO still holds bytes: a frame sent straight to the socket now
                // would overtake them.
                try await Self.drainedAfterReading(batcher, connection) {
                    batcher.write([Self.shared(index, bytes: bytes)], to: output, receipt: WriteReceipt(listener, frames: 1, bytes: bytes))
                }
            }
            #expect(batcher.partialWrites.load(ordering: .relaxed) >= 1, "the socket took part of a frame")
            #expect(listener.frames < count, "frames the client has not read are not reported written")

            var frames = try connection.readFrames(count + 1, timeout: .seconds(30))
            #expect(frames.count == count + 1)
            #expect(String(buffer: frames.removeFirst().payload) == "start")
            // The first frame that is not what was sent (a boolean: the payloads are 64 KiB).
            let wrong = frames.indices.first {
                !(frames[$0].fin && frames[$0].opcode == 0x1 && String(buffer: frames[$0].payload) == Self.expectedText($0, bytes: bytes))
            }
            #expect(wrong == nil, "frame \(wrong ?? -1) is not the one sent")
            try await withTimeout(.seconds(10), "every frame reported written") {
                while listener.frames < count { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(listener.frames == count && listener.bytes == count * bytes)

            // NIO has written everything: the next drain goes straight to the socket again.
            let direct = batcher.directWrites.load(ordering: .relaxed)
            try await Self.drained(batcher) { batcher.write([OutboundText("after")], to: output, receipt: nil) }
            #expect(batcher.directWrites.load(ordering: .relaxed) == direct + 1)
            #expect(try connection.readFrames(1).map { String(buffer: $0.payload) } == ["after"])
        }
    }

    @Test(
        "writes through the pipeline (a control frame, a handler's frame) that NIO still holds keep the drains off the socket until NIO has written them"
    )
    func pipelineWrites() async throws {
        try await Self.withOutput(sendBuffer: 8_192, receiveBuffer: 8_192) { connection, batcher, output in
            let rounds = 10
            let bytes = 32 * 1024
            var expected: [String] = []
            var received: [ServerFrames.Frame] = []
            for index in 0..<rounds {
                // NIO holds nothing, and a drain has seen that: the next one goes straight to the socket.
                try await Self.drained(batcher) { batcher.write([OutboundText("before \(index)")], to: output, receipt: nil) }
                expected.append("before \(index)")
                // A frame written through the pipeline, as the WebSocket handler writes its control
                // frames: NIO holds what the socket does not take.
                let text = Self.expectedText(index, bytes: bytes)
                try await batcher.eventLoop.submit {
                    connection.child.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: text)), promise: nil)
                }.get()
                expected.append(text)
                // Room opens just before the next drain: it must not write past the bytes NIO holds.
                try await Self.drainedAfterReading(batcher, connection) {
                    batcher.write([OutboundText("after \(index)")], to: output, receipt: nil)
                }
                expected.append("after \(index)")
                // The client reads everything, and NIO writes what it held.
                received += try connection.readFrames(3, timeout: .seconds(30))
                try await eventually("NIO has written everything") {
                    try await batcher.eventLoop.submit { (try? connection.child.syncOptions?.getOption(.bufferedWritableBytes)) == 0 }.get()
                }
            }
            #expect(received.count == expected.count)
            let wrong = received.indices.first { !(received[$0].opcode == 0x1 && String(buffer: received[$0].payload) == expected[$0]) }
            #expect(wrong == nil, "frame \(wrong ?? -1) is not the one sent")
            #expect(batcher.directWrites.load(ordering: .relaxed) >= rounds, "the drains before each pipeline write went straight to the socket")
        }
    }

    @Test("a peer that reset the connection: the frames' receipt is delivered and the channel closes; the gateway does not crash (no SIGPIPE)")
    func peerReset() async throws {
        let connection = try await Connection.open()
        let batcher = EventLoopWriteBatcher(eventLoop: connection.child.eventLoop)
        let output = FrameOutput(channel: connection.child)
        let listener = CountingListener()
        connection.resetClient()
        try await Task.sleep(for: .milliseconds(50))
        for index in 0..<3 {
            try await Self.drained(batcher) {
                batcher.write([Self.shared(index, bytes: 16_384)], to: output, receipt: WriteReceipt(listener, frames: 1, bytes: 1))
            }
        }
        try await withTimeout(.seconds(10), "the receipts and the close") {
            while listener.frames < 3 { try await Task.sleep(for: .milliseconds(10)) }
            try await connection.child.closeFuture.get()
        }
        #expect(batcher.directWrites.load(ordering: .relaxed) == 0, "a reset socket took nothing")
        try await connection.close()
    }

    @Test(
        "one drain to several sockets: with the send ring, one io_uring submission (where the kernel allows io_uring) writes each socket's frames whole and in order, a socket that is full takes part and NIO the rest, a reset socket gets its receipt and closes; without it, the same through a sendmsg each"
    )
    func severalSockets() async throws {
        let ringAvailable = SocketRing(entries: 8) != nil
        for sendRing in [true, false] {
            let connections = try await Connection.open(4, sendBuffer: 8_192, receiveBuffer: 8_192)
            let batcher = EventLoopWriteBatcher(eventLoop: connections[0].child.eventLoop, sendRing: sendRing)
            let outputs = connections.map { FrameOutput(channel: $0.child) }
            let listener = CountingListener()
            connections[3].resetClient()
            try await Task.sleep(for: .milliseconds(50))
            let bytes = 64 * 1024
            let rounds = 3
            for round in 0..<rounds {
                try await Self.drained(batcher) {
                    // Sockets 0 and 1 take everything; socket 2's client does not read, so it fills.
                    for index in 0..<2 {
                        let frames: FrameList = [OutboundText("\(index).\(round)"), Self.shared(round, bytes: 500)]
                        batcher.write(frames, to: outputs[index], receipt: WriteReceipt(listener, frames: 2, bytes: 1))
                    }
                    batcher.write([Self.shared(round, bytes: bytes)], to: outputs[2], receipt: WriteReceipt(listener, frames: 1, bytes: 1))
                    batcher.write([Self.shared(round, bytes: 100)], to: outputs[3], receipt: WriteReceipt(listener, frames: 1, bytes: 1))
                }
            }
            let ringWrites = batcher.ringWrites.load(ordering: .relaxed)
            if sendRing && ringAvailable {
                // Sockets 0 and 1 every round, 2 in the first (later NIO holds bytes for it), and 3
                // unless its channel already saw the reset and closed.
                #expect(ringWrites >= 2 * rounds + 1, "sent through the ring: \(ringWrites)")
            } else {
                #expect(ringWrites == 0)
            }
            #expect(batcher.partialWrites.load(ordering: .relaxed) >= 1, "socket 2 took part of its first frame")
            for index in 0..<2 {
                let frames = try connections[index].readFrames(2 * rounds)
                let expected = (0..<rounds).flatMap { ["\(index).\($0)", Self.expectedText($0, bytes: 500)] }
                #expect(frames.map { String(buffer: $0.payload) } == expected, "socket \(index), ring \(sendRing)")
            }
            let large = try connections[2].readFrames(rounds, timeout: .seconds(30))
            #expect(large.map { String(buffer: $0.payload) } == (0..<rounds).map { Self.expectedText($0, bytes: bytes) }, "socket 2, ring \(sendRing)")
            try await withTimeout(.seconds(10), "every receipt, and the reset socket's close") {
                while listener.frames < rounds * 6 { try await Task.sleep(for: .milliseconds(10)) }
                try await connections[3].child.closeFuture.get()
            }
            #expect(listener.frames == rounds * 6)
            for connection in connections where connection !== connections[3] { closeSocket(connection.client) }
            try await Connection.close(connections)
        }
    }
}
