import Hummingbird
import HummingbirdWebSocket
import NIOWebSocket

/// The native protocol's WebSocket at `/v1/gateway` (docs/native-gateway.md), on `LiveSocket`.
struct NativeTransport: Sendable {
    static let path = "/v1/gateway"
    let gateway: NativeGateway
    let trustedProxies: TrustedProxies

    func addUpgrades(to router: RealtimeUpgradeRouter) {
        router.ws(RouterPath(Self.path)) { inbound, outbound, context in
            let address = trustedProxies.clientAddress(peer: context.requestContext.channel.remoteAddress, headers: context.request.headers)
            guard gateway.hub.admission.allowHandshake(from: address) else {
                // Upgraded only to say why, in the protocol's own terms.
                try? await outbound.close(.init(codeNumber: Int(NativeClose.rateLimited)), reason: "too many connections from this address")
                return
            }
            let gateway = self.gateway
            let connection = gateway.open(abort: context.requestContext.abort)
            let limit = gateway.settings.maxFrameBytes
            await LiveSocket.serve(
                inbound: inbound, writer: ChannelWriter(channel: context.requestContext.channel, batchers: gateway.hub.writeBatchers, outbound: outbound),
                connection: connection, maxFrameBytes: limit,
                refusals: .init(
                    binary: { $0.close(code: NativeClose.decodeError, reason: "binary frames are not spoken") },
                    tooLarge: { $0.close(code: NativeClose.messageTooLarge, reason: "frame larger than \($1) bytes") }
                ),
                initial: NativeSession?.none,
                receive: { text, session in await gateway.receive(text, on: connection, session: session) },
                onGracefulShutdown: { gateway.shutdown() },
                ended: { gateway.closed(connection, session: $0) }
            )
        }
    }
}
