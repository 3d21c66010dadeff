import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTP1
import NIOWebSocket
import Synchronization

/// Engine.IO over WebSocket at `/socket.io`, served by NIO handlers with no task while the socket
/// is idle (`RealtimeChildChannel`): a WebSocket-only session (no `sid`: the open packet is the
/// first message) or the upgrade of a polling session (`sid`: `2probe` → `3probe`, the pending
/// poll returns a noop, then `5` switches the session to the WebSocket). A request this transport
/// does not take (an unknown `sid`, no `EIO`) goes on to the polling routes, which answer it with
/// an Engine.IO error.
struct WebSocketTransport: Sendable {
    let server: SocketIOServer
    let trustedProxies: TrustedProxies

    private struct Accepted: Sendable {
        let version: EngineIOVersion
        let identity: SocketIOIdentity
        let clientAddress: String
    }

    /// The detached upgrade for `/socket.io/?EIO=…&transport=websocket[&sid=…]`.
    func detachedUpgrade(for head: RequestHeadPreview) -> DetachedUpgrade? {
        let uri = URI(String(head.target))
        guard uri.path == "/socket.io" || uri.path == "/socket.io/" else { return nil }
        let query = uri.queryParameters
        guard query["transport"] == "websocket", let version = EngineIOVersion(query: query["EIO"].map(String.init)) else { return nil }
        if let sid = query["sid"] {
            guard let session = server.session(String(sid)), session.version == version, session.transport == .polling else { return nil }
            return pollingUpgrade(of: session)
        }
        let server = self.server
        let trustedProxies = self.trustedProxies
        return DetachedUpgrade { head, channel -> Accepted? in
            let headers = HTTPFields(head.headers)
            let clientAddress = trustedProxies.clientAddress(peer: channel.remoteAddress, headers: headers)
            guard server.admission.allowHandshake(from: clientAddress) else { return nil }
            guard case .success(let identity) = await server.authenticate(headers) else { return nil }
            return Accepted(version: version, identity: identity, clientAddress: clientAddress)
        } attach: { accepted, channel in
            let (session, packets) = server.open(
                version: accepted.version, transport: .websocket, identity: accepted.identity, clientAddress: accepted.clientAddress)
            session.attach(abort: { channel.close(promise: nil) })
            try channel.pipeline.syncOperations.addHandler(handler(serving: session) { nil })
            session.attach(ChannelWriter(detached: channel, batchers: server.hub.writeBatchers), first: packets.map(OutboundText.init))
        }
    }

    /// The frame handler of a session on this WebSocket: each client packet goes to the server;
    /// `upgrading` answers the packets of an upgrade still in progress (nil: it is done).
    private func handler(
        serving session: EngineSession, upgrading: @escaping @Sendable () -> PollingUpgrade?
    ) -> DetachedWebSocketHandler {
        let server = self.server
        return DetachedWebSocketHandler(
            maxMessageBytes: server.settings.maxPayloadBytes,
            events: .init(
                receive: { text in
                    if let upgrade = upgrading() { return await upgrade.receive(text) }
                    guard await server.receive(text[...], from: session) else {
                        server.close(session, reason: "websocket closed")
                        return false
                    }
                    return true
                },
                immediate: { text in
                    // A client's pong (the answer to the server's ping, every ping interval) only
                    // proves the client is there: taken on the loop, without a task (part 45).
                    guard text == "3", upgrading() == nil else { return false }
                    session.touch()
                    return true
                },
                binary: {},  // binary packets are not spoken
                shutdown: { server.close(session, reason: "server shutting down") },
                closed: {
                    if let upgrade = upgrading() { return upgrade.ended() }
                    server.close(session, reason: "websocket closed")
                }
            ))
    }

    /// The upgrade of a polling session: the probe, then `5`, within the ping timeout.
    private func pollingUpgrade(of session: EngineSession) -> DetachedUpgrade {
        let server = self.server
        return DetachedUpgrade { _, _ in
            true
        } attach: { _, channel in
            session.attach(abort: { channel.close(promise: nil) })
            let upgrade = PollingUpgrade(session: session, server: server, channel: channel)
            try channel.pipeline.syncOperations.addHandler(handler(serving: session) { upgrade.inProgress ? upgrade : nil })
            // An upgrade that does not complete within the ping timeout is dropped.
            let timeout = TimeAmount.milliseconds(server.settings.pingTimeoutMilliseconds)
            channel.eventLoop.scheduleTask(in: timeout) {
                guard session.transport != .websocket else { return }
                // The handler sees its close frame go out and runs the close handshake.
                channel.writeAndFlush(
                    DetachedWebSocketHandler.closeFrame(.policyViolation, reason: "upgrade timeout", allocator: channel.allocator), promise: nil)
            }
        }
    }
}
