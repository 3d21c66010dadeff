import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOWebSocket
import Synchronization

/// The WebSocket upgrades served by NIO handlers alone (`RealtimeChildChannel`), by protocol.
struct DetachedUpgrades: Sendable {
    /// A first request head longer than this goes to hummingbird's handlers, which answer it.
    var maxHeadBytes = 16 * 1024
    /// The largest single frame NIO's decoder takes (above it, NIO closes with 1009 itself): the
    /// largest protocol's limit, so that a smaller protocol refuses a frame over its own limit in
    /// its own terms, as hummingbird's server did with its one `maxFrameSize`.
    var maxFrameBytes: Int
    /// Each protocol's upgrade for a head it takes (nil: not its request).
    var routes: [@Sendable (RequestHeadPreview) -> DetachedUpgrade?] = []

    func upgrade(for head: RequestHeadPreview?) -> DetachedUpgrade? {
        guard let head, head.method == "GET", head.asksForWebSocket else { return nil }
        for route in routes {
            if let upgrade = route(head) { return upgrade }
        }
        return nil
    }

    /// Adds the HTTP server handlers with `upgrade`'s upgrader (after the sniffer).
    func configure(_ upgrade: DetachedUpgrade, on pipeline: ChannelPipeline.SynchronousOperations) throws {
        try upgrade.configure(pipeline, maxFrameBytes: maxFrameBytes)
    }
}

/// One protocol's WebSocket upgrade without a task per connection: NIO's HTTP server handlers
/// with its WebSocket upgrader. `accept` decides in a short-lived task (nil refuses: 400, as
/// hummingbird answers a refused upgrade); `attach` adds the protocol's frame handler once the
/// upgrade response is out, on the channel's loop.
struct DetachedUpgrade: Sendable {
    private let accept: @Sendable (HTTPRequestHead, any Channel) async -> (any Sendable)?
    private let attach: @Sendable (any Sendable, any Channel) throws -> Void

    init<Accepted: Sendable>(
        accept: @escaping @Sendable (HTTPRequestHead, any Channel) async -> Accepted?,
        attach: @escaping @Sendable (Accepted, any Channel) throws -> Void
    ) {
        self.accept = { head, channel in await accept(head, channel) }
        self.attach = { accepted, channel in
            guard let accepted = accepted as? Accepted else { throw ChannelError.inappropriateOperationForState }
            try attach(accepted, channel)
        }
    }

    /// Adds the HTTP server handlers with this protocol's upgrader (after the sniffer).
    fileprivate func configure(_ pipeline: ChannelPipeline.SynchronousOperations, maxFrameBytes: Int) throws {
        // What `accept` decided (in its task), handed to `attach` on the loop.
        let decision = UpgradeDecision()
        let accept = self.accept
        let attach = self.attach
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: maxFrameBytes, automaticErrorHandling: true,
            shouldUpgrade: { channel, head in
                let promise = channel.eventLoop.makePromise(of: HTTPHeaders?.self)
                promise.completeWithTask {
                    guard let accepted = await accept(head, channel) else { return nil }
                    decision.set(accepted)
                    return HTTPHeaders()
                }
                return promise.futureResult
            },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    guard let accepted = decision.get((any Sendable).self) else { throw ChannelError.inappropriateOperationForState }
                    // The WebSocket handlers went in after it: frames must not reach it.
                    let refused = try channel.pipeline.syncOperations.context(name: RefusedUpgradeResponder.name)
                    channel.pipeline.syncOperations.removeHandler(context: refused, promise: nil)
                    // Below the frame encoder: what NIO is handed (SocketDirectWrite).
                    try channel.pipeline.syncOperations.addHandler(FrameTarget(), position: .first)
                    try attach(accepted, channel)
                }
            }
        )
        try pipeline.configureHTTPServerPipeline(
            withPipeliningAssistance: false, withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }), withErrorHandling: true)
        try pipeline.addHandler(RefusedUpgradeResponder(), name: RefusedUpgradeResponder.name)
    }
}

/// A request the upgrader did not take (a refused handshake): 400 with no body, then the
/// connection closes, as hummingbird-websocket answers a failed upgrade.
final class RefusedUpgradeResponder: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    static let name = "refused-upgrade"

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        let head = HTTPResponseHead(version: .http1_1, status: .badRequest, headers: ["connection": "close", "content-length": "0"])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    /// The client closed its side during the handshake: the upgraded socket could never be read.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}

extension HTTPFields {
    /// NIO's HTTP/1 headers as HTTP fields (a name that is not a valid field name is left out).
    init(_ headers: HTTPHeaders) {
        self.init()
        for (name, value) in headers {
            if let name = HTTPField.Name(name) { append(HTTPField(name: name, value: value)) }
        }
    }
}

/// What an upgrade's `accept` decided, handed to its `attach` (on the channel's loop).
final class UpgradeDecision: Sendable {
    private let value = Mutex<(any Sendable)?>(nil)

    func set(_ decided: any Sendable) { value.withLock { $0 = decided } }

    func get<T: Sendable>(_ type: T.Type) -> T? { value.withLock { $0 as? T } }
}
