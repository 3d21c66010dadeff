import Hummingbird
import HummingbirdWebSocket
import NIOCore
import Synchronization

/// The context of a WebSocket upgrade request on the gateway's upgrade router
/// (hummingbird-websocket's `Router.ws`): each protocol adds its paths with `addUpgrades(to:)`,
/// and an upgrade the router does not take (an unknown path, or a protocol's `.dontUpgrade`)
/// goes on to the HTTP routes as an ordinary request.
struct RealtimeUpgradeContext: RequestContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<Self>
    /// The connection: its peer address, and closing it drops a client that stopped reading.
    let channel: any Channel
    /// What `shouldUpgrade` decided, for the upgrade handler (a verified user, a session).
    let decision: UpgradeDecision

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        channel = source.channel
        decision = UpgradeDecision()
    }

    /// Drops the TCP connection at once (a client that stopped reading never takes a close frame).
    var abort: @Sendable () -> Void { { [channel] in channel.close(promise: nil) } }
}

/// One value handed from a protocol's `shouldUpgrade` to its upgrade handler.
final class UpgradeDecision: Sendable {
    private let value = Mutex<(any Sendable)?>(nil)

    func set(_ decided: any Sendable) { value.withLock { $0 = decided } }

    func get<T: Sendable>(_ type: T.Type) -> T? { value.withLock { $0 as? T } }
}

typealias RealtimeUpgradeRouter = Router<RealtimeUpgradeContext>
