import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// The native protocol's WebSocket at `/v1/gateway` (docs/native-gateway.md): a detached upgrade
/// (`RealtimeChildChannel`) on `LiveSocket`, with no task while the socket is idle.
struct NativeTransport: Sendable {
    static let path = "/v1/gateway"
    let gateway: NativeGateway
    let trustedProxies: TrustedProxies

    /// The detached upgrade for `GET /v1/gateway` (any query).
    func detachedUpgrade(for head: RequestHeadPreview) -> DetachedUpgrade? {
        guard URI(String(head.target)).path == Self.path else { return nil }
        let gateway = self.gateway
        let trustedProxies = self.trustedProxies
        return DetachedUpgrade { head, channel -> Bool in
            // Over the address's handshake rate it is upgraded only to say why, in the protocol's own terms.
            gateway.hub.admission.allowHandshake(from: trustedProxies.clientAddress(peer: channel.remoteAddress, headers: HTTPFields(head.headers)))
        } attach: { admitted, channel in
            guard admitted else {
                return try DetachedWebSocketHandler.refuse(
                    channel, code: .init(codeNumber: Int(NativeClose.rateLimited)), reason: "too many connections from this address")
            }
            let connection = gateway.open(abort: { channel.close(promise: nil) })
            try LiveSocket.attach(
                to: channel, batchers: gateway.hub.writeBatchers, connection: connection, maxFrameBytes: gateway.settings.maxFrameBytes,
                refusals: .init(
                    binary: { $0.close(code: NativeClose.decodeError, reason: "binary frames are not spoken") },
                    tooLarge: { $0.close(code: NativeClose.messageTooLarge, reason: "frame larger than \($1) bytes") }
                ),
                initial: NativeSession?.none,
                receive: { text, session in await gateway.receive(text, on: connection, session: session) },
                immediate: { text, _ in gateway.answerAtOnce(text, on: connection) },
                onGracefulShutdown: { gateway.shutdown() },
                ended: { gateway.closed(connection, session: $0) }
            )
        }
    }
}
