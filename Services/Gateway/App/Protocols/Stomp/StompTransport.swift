import Foundation
import Hummingbird
import HTTPTypes
import HummingbirdCore
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// STOMP's WebSockets: `/my-chat/websocket` (the raw-WebSocket transport of the SockJS endpoint
/// `/my-chat` that Smooth's client connects to) and `/v1/stomp`; plus SockJS's `/my-chat/info`
/// so SockJS clients find the WebSocket transport.
struct StompTransport: Sendable {
    static let paths = ["/my-chat/websocket", "/v1/stomp"]
    let server: StompServer
    let trustedProxies: TrustedProxies

    private struct Handshake: Sendable {
        var admitted: Bool
        var host: String?
    }

    /// The detached upgrade for `GET` of either path (`RealtimeChildChannel`), on `LiveSocket`,
    /// with no task while the socket is idle.
    func detachedUpgrade(for head: RequestHeadPreview) -> DetachedUpgrade? {
        guard Self.paths.contains(URI(String(head.target)).path) else { return nil }
        let server = self.server
        let trustedProxies = self.trustedProxies
        return DetachedUpgrade { head, channel -> Handshake in
            // Over the address's handshake rate it is upgraded only to say why, in STOMP's terms.
            let address = trustedProxies.clientAddress(peer: channel.remoteAddress, headers: HTTPFields(head.headers))
            return Handshake(admitted: server.hub.admission.allowHandshake(from: address), host: head.headers.first(name: "host"))
        } attach: { handshake, channel in
            guard handshake.admitted else {
                let error = StompFrame.error(message: "too many connections from this address").encoded()
                return try DetachedWebSocketHandler.refuse(channel, texts: [error], code: .policyViolation, reason: "too many connections")
            }
            let link = server.open(abort: { channel.close(promise: nil) }, host: handshake.host)
            try LiveSocket.attach(
                to: channel, batchers: server.hub.writeBatchers, connection: link.connection, maxFrameBytes: server.settings.maxFrameBytes,
                refusals: .init(
                    binary: { $0.close(code: 1003, reason: "binary frames are not spoken") },
                    tooLarge: { connection, limit in
                        _ = connection.send(
                            OutboundText(String(decoding: StompFrame.error(message: "frame larger than \(limit) bytes").encoded(), as: UTF8.self)))
                        connection.close(code: 1009, reason: "frame too large")
                    }
                ),
                initial: link,
                receive: { text, link in await server.receive(text, link: link) },
                immediate: { text, link in server.heartbeatAtOnce(text, link: link) },
                onGracefulShutdown: { server.shutdown() },
                ended: { server.closed($0) }
            )
        }
    }

    /// SockJS's info document (`GET /my-chat/info`): WebSocket available, no cookies needed.
    func addRoutes(to router: some RouterMethods<GatewayRequestContext>) {
        router.get("/my-chat/info") { _, _ -> Response in
            var headers = HTTPFields()
            headers[.contentType] = "application/json; charset=UTF-8"
            headers[.cacheControl] = "no-store, no-cache, no-transform, must-revalidate, max-age=0"
            let entropy = UInt32.random(in: 0...UInt32.max)
            let body = #"{"entropy":\#(entropy),"origins":["*:*"],"cookie_needed":false,"websocket":true}"#
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
        }
    }
}
