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

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    public var requestDecoder: JSONDecoder { SuiteJSON.decoder() }
    public var responseEncoder: JSONEncoder { SuiteJSON.encoder() }

    /// The client address without the port (rate-limit key).
    var clientAddress: String {
        remoteAddress?.ipAddress ?? "unknown"
    }
}
