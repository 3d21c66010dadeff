import Foundation
import HTTPTypes
import HummingbirdTesting
import HummingbirdWSClient
import Logging
import NIOCore
import NIOWebSocket
import Synchronization
import Testing

@testable import GatewayApp
import SuiteTesting

/// Socket.IO WebSockets on the task-free path — a WebSocket-only session and the upgrade of a
/// polling session — through the real gateway with a plain WebSocket client (python-socketio
/// covers the protocol itself in `SocketIOTests`).
@Suite("Socket.IO WebSockets without a task per socket", .serialized)
struct DetachedSocketIOTests {
    private var logger: Logger {
        var logger = Logger(label: "detached-socketio-test")
        logger.logLevel = .warning
        return logger
    }

    @Test("the open packet, a namespace connect and a packet in fragments are answered; a frame over the limit closes with 1009; a bad token is refused")
    func detachedSession() async throws {
        let gatewayId = "gw-detached-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: ["GATEWAY_ID": gatewayId]) { s in
            let a = try await s.user("에이")
            let port = try #require(s.client.port)
            let url = "ws://127.0.0.1:\(port)/socket.io/?EIO=4&transport=websocket"
            let headers: HTTPFields = [.authorization: "Bearer \(a.token)"]
            let received = Mutex<[String]>([])
            let close = try await WebSocketClient.connect(url: url, configuration: .init(additionalHeaders: headers), logger: logger) { inbound, outbound, _ in
                var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                guard case .text(let open)? = try await messages.next() else { return }
                received.withLock { $0.append(open) }
                // The default namespace's connect, in three fragments.
                try await outbound.write(.custom(WebSocketFrame(fin: false, opcode: .text, data: ByteBuffer(string: "4"))))
                try await outbound.write(.custom(WebSocketFrame(fin: false, opcode: .continuation, data: ByteBuffer(string: "0"))))
                try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .continuation, data: ByteBuffer(string: ""))))
                guard case .text(let connected)? = try await messages.next() else { return }
                received.withLock { $0.append(connected) }
                try await outbound.write(.text(String(repeating: "x", count: 2 << 20)))
                while try await messages.next() != nil {}
            }
            let packets = received.withLock { $0 }
            #expect(packets.first?.hasPrefix(#"0{"sid":""#) == true, "\(packets)")
            #expect(packets.dropFirst().first?.hasPrefix("40") == true, "\(packets)")
            #expect(close?.closeCode == .messageTooLarge, "\(String(describing: close))")

            // A token that does not verify: the handshake gets 400 and no WebSocket.
            let refused = try? await WebSocketClient.connect(
                url: url, configuration: .init(additionalHeaders: [.authorization: "Bearer not-a-token"]), logger: logger
            ) { _, _, _ in
                Issue.record("a bad token was upgraded")
            }
            #expect(refused == nil)
        }
    }

    /// A polling session's id (the handshake's open packet).
    private func pollingSession(_ s: Stack) async throws -> String {
        let body = String(buffer: try await s.client.execute(uri: "/socket.io/?EIO=4&transport=polling", method: .get, headers: [:], body: nil).body)
        return String(body.dropFirst(#"0{"sid":""#.count).prefix { $0 != "\"" })
    }

    @Test(
        "a polling session upgrades: 2probe → 3probe, 5, then its packets go over the WebSocket; a wrong packet after the probe closes the session; an unknown sid is refused with Engine.IO's error; a socket that never probes is closed 1008 after the ping timeout"
    )
    func pollingUpgrade() async throws {
        let gatewayId = "gw-upgrade-\(UUID().uuidString.prefix(8).lowercased())"
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: ["GATEWAY_ID": gatewayId, "GATEWAY_SOCKETIO_PING_TIMEOUT_MS": "1500"]) { s in
            let port = try #require(s.client.port)
            let sid = try await pollingSession(s)
            let received = Mutex<[String]>([])
            _ = try await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/socket.io/?EIO=4&transport=websocket&sid=\(sid)", logger: logger) {
                inbound, outbound, _ in
                var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                try await outbound.write(.text("2probe"))
                guard case .text(let probe)? = try await messages.next() else { return }
                received.withLock { $0.append(probe) }
                try await outbound.write(.text("5"))
                try await outbound.write(.text("40"))
                guard case .text(let connected)? = try await messages.next() else { return }
                received.withLock { $0.append(connected) }
                try await outbound.close(.normalClosure, reason: nil)
            }
            let packets = received.withLock { $0 }
            #expect(packets.first == "3probe", "\(packets)")
            #expect(packets.dropFirst().first?.hasPrefix(#"40{"sid":""#) == true, "\(packets)")

            // After the probe, anything but 5 ends the session: its next poll is refused.
            let failed = try await pollingSession(s)
            _ = try await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/socket.io/?EIO=4&transport=websocket&sid=\(failed)", logger: logger) {
                inbound, outbound, _ in
                var messages = inbound.messages(maxSize: 1 << 20).makeAsyncIterator()
                try await outbound.write(.text("2probe"))
                _ = try await messages.next()
                try await outbound.write(.text("4oops"))
                while try await messages.next() != nil {}
            }
            let poll = try await s.client.execute(uri: "/socket.io/?EIO=4&transport=polling&sid=\(failed)", method: .get, headers: [:], body: nil)
            #expect(poll.status == .badRequest, "\(poll.status) \(String(buffer: poll.body))")

            // An unknown sid is not upgraded: the polling routes answer with Engine.IO's error.
            let unknown = try await s.client.execute(
                uri: "/socket.io/?EIO=4&transport=websocket&sid=unknown", method: .get,
                headers: [.connection: "Upgrade", .upgrade: "websocket", .secWebSocketVersion: "13", .secWebSocketKey: "dGhlIHNhbXBsZSBub25jZQ=="], body: nil)
            #expect(unknown.status == .badRequest && String(buffer: unknown.body).contains("\"code\""), "\(unknown.status) \(String(buffer: unknown.body))")

            // Upgraded but never probed: closed 1008 once the ping timeout (1.5 s) passed.
            let idle = try await pollingSession(s)
            let started = ContinuousClock.now
            let close = try await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)/socket.io/?EIO=4&transport=websocket&sid=\(idle)", logger: logger) {
                inbound, _, _ in
                for try await _ in inbound.messages(maxSize: 1 << 20) {}
            }
            #expect(close?.closeCode == .policyViolation && close?.reason == "upgrade timeout", "\(String(describing: close))")
            #expect(ContinuousClock.now - started < .seconds(15))
        }
    }
}
