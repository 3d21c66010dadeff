import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// Engine.IO over WebSocket for a WebSocket-only session (no `sid`), served by NIO handlers with
/// no task while the socket is idle (`RealtimeChildChannel`). The upgrade of a polling session
/// (`sid`, the probe exchange) stays on `WebSocketTransport`.
extension WebSocketTransport {
    private struct Accepted: Sendable {
        let version: EngineIOVersion
        let identity: SocketIOIdentity
        let clientAddress: String
    }

    /// The detached upgrade for `/socket.io/?EIO=…&transport=websocket` without a `sid`.
    func detachedUpgrade(for head: RequestHeadPreview) -> DetachedUpgrade? {
        let uri = URI(String(head.target))
        guard uri.path == "/socket.io" || uri.path == "/socket.io/" else { return nil }
        let query = uri.queryParameters
        guard query["transport"] == "websocket", query["sid"] == nil, let version = EngineIOVersion(query: query["EIO"].map(String.init)) else {
            return nil
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
            let handler = DetachedWebSocketHandler(
                maxMessageBytes: server.settings.maxPayloadBytes,
                events: .init(
                    receive: { text in
                        guard await server.receive(text[...], from: session) else {
                            server.close(session, reason: "websocket closed")
                            return false
                        }
                        return true
                    },
                    binary: {},  // binary packets are not spoken
                    shutdown: { server.close(session, reason: "server shutting down") },
                    closed: { server.close(session, reason: "websocket closed") }
                ))
            try channel.pipeline.syncOperations.addHandler(handler)
            session.attach(ChannelWriter(detached: channel, batchers: server.hub.writeBatchers), first: packets.map(OutboundText.init))
        }
    }
}
