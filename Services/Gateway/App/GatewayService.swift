import AsyncHTTPClient
import Configuration
import HTTPTypes
import ServiceLifecycle
import Database
import Hummingbird
import Logging
import ServiceKit

/// `gateway`: Terminates client REST and WebSockets and routes to the services (REST edge and real-time protocols arrive with their issues).
public enum GatewayService {
    public static let name = "gateway"
    /// Defaults below environment variables and command-line flags (docs/configuration.md).
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = [
        "http.port": 8080,
        "auth.url": "http://127.0.0.1:8081",
        "workspace.url": "http://127.0.0.1:8082",
        "chat.url": "http://127.0.0.1:8083",
        "presence.url": "http://127.0.0.1:8085",
        "payment.url": "http://127.0.0.1:8086",
        // WorkSpaceX polls its DM list and every room every 2 s: 1 + N requests per 2 s per user.
        "gateway.user-rate-per-second": 30,
        "gateway.user-burst": 200,
        "gateway.address-rate-per-second": 100,
        "gateway.address-burst": 600,
        // 5 files × 5 MB per message plus form overhead.
        "gateway.max-body-bytes": 27_262_976,
        "gateway.upstream-timeout-seconds": 60,
    ]
}

/// Builds the `gateway` application: platform services, routes, and the startup step.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let gateway = try GatewaySettings(settings)
    var platform = try await ServicePlatform.make(settings: settings, migrations: nil, logger: logger)
    let verifier = try await AccessTokenVerifier(publicKey: .ed25519PEM(gateway.jwtPublicKeyPEM), audience: gateway.audience, issuer: gateway.issuer)
    var clientConfiguration = HTTPClient.Configuration()
    clientConfiguration.redirectConfiguration = .disallow
    clientConfiguration.decompression = .disabled
    clientConfiguration.timeout = .init(connect: .seconds(3))
    clientConfiguration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
    let httpClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
    platform.addService(HTTPClientService(client: httpClient))
    let edge = Edge(
        settings: gateway, routes: .suite, verifier: verifier,
        proxy: ReverseProxy(client: httpClient, timeout: .seconds(Int64(gateway.upstreamTimeoutSeconds))),
        userLimiter: RateLimiter(rate: gateway.userRatePerSecond, burst: gateway.userBurst),
        addressLimiter: RateLimiter(rate: gateway.addressRatePerSecond, burst: gateway.addressBurst)
    )
    let router = platform.makeRouter(context: GatewayRequestContext.self)
    let v1 = router.group("/v1").add(middleware: AccessLogMiddleware(logger: logger))
    for method in [HTTPRequest.Method.get, .post, .put, .delete, .patch] {
        v1.on("**", method: method) { request, context in try await edge.handle(request, context: context) }
    }
    return try platform.makeApplication(responder: router.buildResponder())
}
