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

/// A WebSocket-only Socket.IO session on the task-free path, through the real gateway with a
/// plain WebSocket client (python-socketio covers the protocol itself in `SocketIOTests`).
@Suite("Socket.IO WebSocket-only sessions without a task per socket", .serialized)
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
}
