import Foundation
import Hummingbird
import HummingbirdWebSocket
import NIOCore
import NIOWebSocket

/// STOMP's WebSockets: `/my-chat/websocket` (the raw-WebSocket transport of the SockJS endpoint
/// `/my-chat` that Smooth's client connects to) and `/v1/stomp`; plus SockJS's `/my-chat/info`
/// so SockJS clients find the WebSocket transport.
struct StompTransport: Sendable {
    static let paths = ["/my-chat/websocket", "/v1/stomp"]
    let server: StompServer
    let trustedProxies: TrustedProxies

    func addUpgrades(to router: RealtimeUpgradeRouter) {
        for path in Self.paths {
            router.ws(RouterPath(path)) { inbound, outbound, context in
                let address = trustedProxies.clientAddress(peer: context.requestContext.channel.remoteAddress, headers: context.request.headers)
                let server = self.server
                guard server.hub.admission.allowHandshake(from: address) else {
                    let error = StompFrame.error(message: "too many connections from this address")
                    try? await outbound.write(.text(String(decoding: error.encoded(), as: UTF8.self)))
                    try? await outbound.close(.policyViolation, reason: "too many connections")
                    return
                }
                let link = server.open(abort: context.requestContext.abort, host: context.request.head.authority)
                await LiveSocket.serve(
                    inbound: inbound, writer: ChannelWriter(channel: context.requestContext.channel, batchers: server.hub.writeBatchers, outbound: outbound),
                    connection: link.connection, maxFrameBytes: server.settings.maxFrameBytes,
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
                    onGracefulShutdown: { server.shutdown() },
                    ended: { server.closed($0) }
                )
            }
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
