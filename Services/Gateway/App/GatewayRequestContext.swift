import Foundation
import Hummingbird
import NIOCore
import ServiceKit

/// The gateway's request context: the suite's JSON coders plus the client's address.
public struct GatewayRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// Set by `AccessLogMiddleware` for the request's lifetime.
    public var requestId: String = ""

    /// The client address without the port (rate-limit and admission key, access log): the TCP
    /// peer, replaced by `ClientAddressMiddleware` with what a trusted proxy forwarded.
    var clientAddress: String

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        clientAddress = remoteAddress?.ipAddress ?? "unknown"
    }

    public var requestDecoder: JSONDecoder { SuiteJSON.decoder() }
    public var responseEncoder: JSONEncoder { SuiteJSON.encoder() }
}
