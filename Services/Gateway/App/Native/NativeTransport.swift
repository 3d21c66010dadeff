import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import ServiceLifecycle

/// The native protocol's WebSocket at `/v1/gateway`: one writer task drains the connection's
/// queue; the handler's task reads client frames in order.
struct NativeTransport: Sendable {
    typealias Handler = WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>
    static let path = "/v1/gateway"
    let gateway: NativeGateway
    let admission: RealtimeAdmission
    let trustedProxies: TrustedProxies

    func shouldUpgrade(_ head: HTTPRequest, channel: any Channel) -> ShouldUpgradeResult<Handler> {
        let uri = URI(head.path ?? "")
        guard uri.path == Self.path || uri.path == Self.path + "/" else { return .dontUpgrade }
        guard admission.allowHandshake(from: trustedProxies.clientAddress(peer: channel.remoteAddress, headers: head.headerFields)) else {
            // Upgraded only to say why, in the protocol's own terms.
            return .upgrade([:]) { _, outbound, _ in
                try? await outbound.close(.init(codeNumber: Int(NativeClose.rateLimited)), reason: "too many connections from this address")
            }
        }
        return .upgrade([:]) { inbound, outbound, _ in
            await serve(inbound: inbound, outbound: outbound, channel: channel)
        }
    }

    private func serve(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, channel: any Channel) async {
        let gateway = self.gateway
        let connection = gateway.open(abort: { channel.close(promise: nil) })
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                writing: while true {
                    switch await connection.next() {
                    case .frames(let frames):
                        // Timed by the heartbeat sweep: a write that does not finish in time
                        // (the client stopped reading) aborts the connection, which ends it.
                        connection.writer { $0.writing() }
                        defer { connection.writer { $0.idle() } }
                        do {
                            for frame in frames {
                                try await frame.write(to: outbound)
                                connection.writer { $0.writing(wrote: frame.byteCount) }
                            }
                        } catch {
                            break writing
                        }
                    case .close(let code, let reason):
                        try? await outbound.close(.init(codeNumber: Int(code)), reason: reason)
                        break writing
                    }
                }
            }
            var session: NativeSession?
            await withGracefulShutdownHandler {
                var messages = inbound.messages(maxSize: gateway.settings.maxFrameBytes).makeAsyncIterator()
                while !connection.isClosing {
                    guard let message = try? await messages.next() else { break }
                    guard case .text(let text) = message else {
                        connection.close(code: NativeClose.decodeError, reason: "binary frames are not spoken")
                        break
                    }
                    // The server's frame limit is Socket.IO's (larger), and hummingbird-websocket
                    // checks `maxSize` only across fragments: enforce the native limit here.
                    guard text.utf8.count <= gateway.settings.maxFrameBytes else {
                        connection.close(code: NativeClose.messageTooLarge, reason: "frame larger than \(gateway.settings.maxFrameBytes) bytes")
                        break
                    }
                    // Each frame is handled in a short-lived task: identify and resume go deep
                    // (HTTP to chat, JSON), and a task keeps the stack slabs of its deepest call
                    // for as long as it lives, which for this reading task is the connection's
                    // life (heaptrack: ~9 KiB per idle socket from identify's HTTP call alone).
                    let current = session
                    session = await Task { await gateway.receive(text, on: connection, session: current) }.value
                }
            } onGracefulShutdown: {
                gateway.shutdown()
            }
            gateway.closed(connection, session: session)
            await group.waitForAll()
        }
    }
}

/// One loop for every native connection and session (no task per socket): identify deadlines,
/// zombie connections, expired detached sessions; at shutdown, checkpoints every session.
struct NativeHeartbeat: Service {
    let gateway: NativeGateway

    func run() async throws {
        await withGracefulShutdownHandler {
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                do { try await Task.sleep(for: .seconds(1)) } catch { break }
                gateway.sweep(now: .now)
            }
        } onGracefulShutdown: {
            gateway.shutdown()
        }
    }
}
