import AccessTokens
import AsyncHTTPClient
import Configuration
import Database
import FirebaseAuth
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import OutboundHTTP
import ServiceCatalog
import ServiceKit
import ServiceLifecycle

/// `gateway`: Terminates client REST and WebSockets and routes to the services (REST edge and real-time protocols arrive with their issues).
public enum GatewayService {
    public static let name = ServiceEntry.gateway.name
    /// Defaults below environment variables and command-line flags (docs/configuration.md):
    /// the catalog's ports (`http.port`, each upstream's `<name>.url` on 127.0.0.1), then the
    /// gateway's own.
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = catalogDefaults.merging(ownDefaults) { $1 }

    private static let catalogDefaults: [AbsoluteConfigKey: ConfigValue] = Dictionary(
        uniqueKeysWithValues: [(AbsoluteConfigKey("http.port"), ConfigValue(.int(ServiceEntry.gateway.port), isSecret: false))]
            + ServiceEntry.upstreams.map { (AbsoluteConfigKey(ConfigKey($0.urlSetting)), ConfigValue(.string("http://127.0.0.1:\($0.port)"), isSecret: false)) }
    )

    private static let ownDefaults: [AbsoluteConfigKey: ConfigValue] = [
        // WorkSpaceX polls its DM list and every room every 2 s: 1 + N requests per 2 s per user.
        "gateway.user-rate-per-second": 30,
        "gateway.user-burst": 200,
        "gateway.address-rate-per-second": 100,
        "gateway.address-burst": 600,
        // 5 files × 5 MB per message plus form overhead.
        "gateway.max-body-bytes": 27_262_976,
        // JSON and form bodies: a message's text and a few fields; the services refuse more.
        "gateway.max-plain-body-bytes": 1_048_576,
        "gateway.upstream-timeout-seconds": 60,
        // Connections to each service. A request holds one for as long as it runs (a 5 MB upload
        // from a slow phone, a workspace creation awaiting its coin saga); one that finds them all
        // busy waits at most the connect timeout (3 s) and is E99, so this must cover the
        // requests in flight at a peak, not the average.
        "gateway.upstream-connections": 1_024,
        // Load balancers whose X-Forwarded-For is believed (comma-separated IPs / CIDRs); none by default.
        "gateway.trusted-proxies": "",
        // App keys of Gen A clients (Lilac); none by default.
        "sesac.generation-a-keys": ConfigValue(.string(""), isSecret: true),
        // Socket.IO (docs/realtime.md). `gateway.id` defaults to the instance id.
        "gateway.socketio.ping-interval-ms": 25_000,
        "gateway.socketio.ping-timeout-ms": 20_000,
        "gateway.socketio.max-payload-bytes": 1_000_000,
        "gateway.socketio.max-queued-packets": 1_000,
        "gateway.socketio.max-queued-bytes": 4_194_304,
        "gateway.socketio.anonymous": "true",
        // The study app's Firebase project, as `study` has it: a handshake's `idtoken` proves its uid.
        AbsoluteConfigKey(ConfigKey(FirebaseProject.projectIdSetting)): "",
        AbsoluteConfigKey(ConfigKey(FirebaseProject.keySetURLSetting)): ConfigValue(.string(FirebaseProject.googleKeySetURL), isSecret: false),
        "gateway.socketio.max-namespaces": 500,
        // Real-time admission per client address (docs/realtime.md): handshakes and joins.
        "gateway.realtime.handshake-rate-per-second": 20,
        "gateway.realtime.handshake-burst": 200,
        "gateway.realtime.join-rate-per-second": 100,
        "gateway.realtime.join-burst": 1_000,
        // A write to a WebSocket that does not finish within this drops the connection.
        "gateway.realtime.write-timeout-ms": 10_000,
        // Recent event ids remembered to drop Kafka redeliveries (every protocol).
        "gateway.realtime.dedupe-window": 100_000,
        "gateway.realtime.presence-batch-ms": 250,
        // Several sockets' frames in one io_uring submission where the kernel allows it.
        "gateway.realtime.send-ring": "true",
        // `gateway.alive` on gateway.session.v1: presence declares a gateway dead after
        // missing three of these (docs/presence.md).
        "gateway.liveness-interval-ms": 5_000,
        // Native protocol (docs/native-gateway.md).
        "gateway.native.heartbeat-interval-ms": 41_250,
        "gateway.native.resume-window-seconds": 300,
        "gateway.native.max-frame-bytes": 65_536,
        "gateway.native.max-queued-frames": 2_000,
        "gateway.native.max-queued-bytes": 4_194_304,
        "gateway.native.resume-marks": 1_000,
        "gateway.native.replay-limit": 1_000,
        "gateway.native.messages-per-minute": 120,
        // STOMP over WebSocket (docs/stomp.md).
        "gateway.stomp.max-frame-bytes": 65_536,
        "gateway.stomp.max-headers": 32,
        "gateway.stomp.max-header-line-bytes": 4_096,
        "gateway.stomp.max-subscriptions": 100,
        "gateway.stomp.heartbeat-ms": 10_000,
        "gateway.stomp.connect-timeout-ms": 10_000,
        "gateway.stomp.max-queued-frames": 2_000,
        "gateway.stomp.max-queued-bytes": 4_194_304,
        // Smooth's REST surface (docs/smooth-api.md).
        "gateway.smooth.auth-prefix": "/auth-server",
        "gateway.smooth.community-prefix": "/community-server",
        "gateway.smooth.chat-prefix": "/chat-server",
        "gateway.smooth.anonymous-history": "true",
        // The gateway's URL as clients reach it; empty = `http://` + the request's Host.
        "gateway.public-url": "",
    ]
}

/// Builds the `gateway` application: platform services, routes, and the startup step.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let gateway = try GatewaySettings(settings)
    // Every setting is read before anything that must be shut down (the HTTP client) exists.
    var protocols = try ProtocolSettings(settings)
    let smooth = try SmoothSettings(settings)
    protocols.stomp.files = StompFileLinks(publicURL: smooth.publicURL, chatPrefix: smooth.chatPrefix)
    let document = try APIDocument.load()
    let schemas = try EventSchemaDocuments.load()
    let firebaseProject: FirebaseProject
    do {
        firebaseProject = try FirebaseProject(
            projectId: try settings.string(FirebaseProject.projectIdSetting), keySetURL: try settings.string(FirebaseProject.keySetURLSetting))
    } catch let invalid as FirebaseProject.Invalid {
        throw StartupError(invalid.description)
    }
    var platform = try await ServicePlatform.make(settings: settings, logger: logger)
    let verifier = try await AccessTokenVerifier(publicKey: .ed25519PEM(gateway.jwtPublicKeyPEM), audience: gateway.audience, issuer: gateway.issuer)
    // Health and metrics on the admin listener only (`admin.port`), not on the public port; the
    // proxy's requests are labelled by the API document's path template, not the catch-all `/v1/**`.
    let templates = document.pathTemplates
    let router = try platform.makePublicRouter(context: GatewayRequestContext.self) { request, context in
        context.endpointPath == "/v1/**" ? templates.label(for: request.uri.path) : nil
    }
    var clientConfiguration = HTTPClient.Configuration()
    clientConfiguration.redirectConfiguration = .disallow
    clientConfiguration.decompression = .disabled
    clientConfiguration.timeout = .init(connect: .seconds(3))
    clientConfiguration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: gateway.upstreamConnections)
    clientConfiguration.traceOnlyWithATracer()
    let httpClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
    platform.addService(HTTPClientService(client: httpClient))
    let routes = RouteTable.suite
    let edge = Edge(
        settings: gateway, routes: routes, verifier: verifier,
        proxy: ReverseProxy(client: httpClient, timeout: .seconds(Int64(gateway.upstreamTimeoutSeconds))),
        userLimiter: RateLimiter(rate: gateway.userRatePerSecond, burst: gateway.userBurst),
        addressLimiter: RateLimiter(rate: gateway.addressRatePerSecond, burst: gateway.addressBurst)
    )
    router.router.middlewares.add(ClientAddressMiddleware(trustedProxies: gateway.trustedProxies))
    let v1 = router.group("/v1").add(middleware: AccessLogMiddleware(logger: logger))
    document.addRoute(to: v1)
    schemas.addRoute(to: v1)
    for method in [HTTPRequest.Method.get, .post, .put, .delete, .patch] {
        v1.on("**", method: method) { request, context in try await edge.handle(request, context: context) }
    }
    // `/v2/users/login` (Gen B's login where other clients of the SeSAC server call it); the
    // catalog has no other `/v2` route, so the rest is E97.
    let v2 = router.group("/v2").add(middleware: AccessLogMiddleware(logger: logger))
    for method in [HTTPRequest.Method.get, .post, .put, .delete, .patch] {
        v2.on("**", method: method) { request, context in try await edge.handle(request, context: context) }
    }
    SmoothEdge(
        settings: smooth, gateway: gateway, routes: routes, verifier: verifier, proxy: edge.proxy, userLimiter: edge.userLimiter,
        addressLimiter: edge.addressLimiter, home: SmoothHome(client: httpClient, logger: logger)
    ).addRoutes(to: router, middleware: AccessLogMiddleware(logger: logger))
    StudyEdge(gateway: gateway, routes: routes, proxy: edge.proxy, addressLimiter: edge.addressLimiter)
        .addRoutes(to: router, middleware: AccessLogMiddleware(logger: logger))
    let detached = realtime(
        protocols, livenessIntervalMilliseconds: gateway.livenessIntervalMilliseconds, trustedProxies: gateway.trustedProxies,
        platform: &platform, verifier: verifier,
        access: ConversationAccess(client: httpClient, chatURL: gateway.upstreams[ServiceEntry.chat.name] ?? "", logger: logger),
        operations: StompOperations(client: httpClient, chatURL: gateway.upstreams[ServiceEntry.chat.name] ?? "", userLimiter: edge.userLimiter),
        firebase: firebaseProject.isConfigured
            ? FirebaseTokenVerifier(projectId: firebaseProject.projectId, keySetURL: firebaseProject.keySetURL, client: httpClient, logger: logger)
            : nil,
        router: router, logger: logger
    )
    return platform.makeApplication(
        responder: router.buildResponder(),
        server: HTTPServerBuilder { responder in RealtimeChildChannel(inner: HTTP1Channel(responder: responder), detached: detached) }
    )
}

/// The real-time core and its protocols (docs/realtime.md, docs/native-gateway.md,
/// docs/adding-a-protocol.md): the hub, the event publisher, heartbeats, the session checkpoint
/// table, the membership watcher and the delivery consumer run as platform services; each
/// protocol's WebSocket upgrade is a route of the returned `DetachedUpgrades` (Socket.IO's polling
/// routes and SockJS's info go on `router`).
private func realtime(
    _ protocols: ProtocolSettings, livenessIntervalMilliseconds: Int, trustedProxies: TrustedProxies, platform: inout ServicePlatform<NoDatabase>,
    verifier: AccessTokenVerifier, access: ConversationAccess, operations: StompOperations, firebase: FirebaseTokenVerifier?,
    router: ServiceRouter<GatewayRequestContext>, logger: Logger
) -> DetachedUpgrades {
    let (realtime, socketIO, nativeSettings) = (protocols.realtime, protocols.socketIO, protocols.native)
    let gatewayId = realtime.gatewayId
    let publisher = GatewayEventPublisher(producer: platform.producer, gatewayId: gatewayId, logger: logger)
    let hub = RealtimeHub(
        settings: realtime, events: publisher, interest: GatewayInterest(gatewayId: gatewayId, events: publisher), access: access,
        verifier: verifier, admission: protocols.admission
    )
    let server = SocketIOServer(settings: socketIO, hub: hub, firebase: firebase, logger: logger)
    let client = platform.kafkaClient
    let fetchWait = platform.platformSettings.kafkaFetchWaitMilliseconds
    let checkpoints = SessionCheckpoints(client: client, fetchWaitMilliseconds: fetchWait, retention: nativeSettings.resumeWindow, logger: logger)
    let native = NativeGateway(settings: nativeSettings, hub: hub, checkpoints: checkpoints, logger: logger)
    let stomp = StompServer(settings: protocols.stomp, hub: hub, operations: operations, logger: logger)
    // Shutdown runs in reverse: the heartbeats checkpoint native sessions while the publisher still runs.
    platform.addService(publisher)
    platform.addService(GatewayLiveness(gatewayId: gatewayId, intervalMilliseconds: livenessIntervalMilliseconds, events: publisher))
    platform.addService(SocketIOHeartbeat(server: server))
    platform.addService(SweepService(sweep: native.sweep, shutdown: native.shutdown))
    platform.addService(PresenceFlush(hub: hub, window: realtime.presenceBatchWindow))
    platform.addService(SweepService(sweep: stomp.sweep, shutdown: stomp.shutdown))
    platform.addGatedService { checkpoints }
    platform.addGatedService { MembershipWatcher(hub: hub, client: client, fetchWaitMilliseconds: fetchWait, logger: logger) }
    let deliveryFetchWait = platform.platformSettings.kafkaDeliveryFetchWaitMilliseconds
    let deliveryFetchMinBytes = platform.platformSettings.kafkaDeliveryFetchMinBytes
    let deliveryFetchBatch = platform.platformSettings.kafkaDeliveryFetchBatchMilliseconds
    let nativeDeliveryReader = platform.platformSettings.kafkaDeliveryReaderIsNative
    platform.addGatedService {
        DeliveryConsumer(
            hub: hub, client: client, fetchWaitMilliseconds: deliveryFetchWait, fetchMinBytes: deliveryFetchMinBytes,
            fetchBatchMilliseconds: deliveryFetchBatch, nativeReader: nativeDeliveryReader, logger: logger)
    }
    PollingTransport(server: server).addRoutes(to: router)
    let socketIOWebSocket = WebSocketTransport(server: server, trustedProxies: trustedProxies)
    let maxFrameBytes = max(socketIO.maxPayloadBytes, nativeSettings.maxFrameBytes, protocols.stomp.maxFrameBytes)
    let nativeTransport = NativeTransport(gateway: native, trustedProxies: trustedProxies)
    let stompTransport = StompTransport(server: stomp, trustedProxies: trustedProxies)
    stompTransport.addRoutes(to: router)
    var detached = DetachedUpgrades(maxFrameBytes: maxFrameBytes)
    detached.routes.append { socketIOWebSocket.detachedUpgrade(for: $0) }
    detached.routes.append { nativeTransport.detachedUpgrade(for: $0) }
    detached.routes.append { stompTransport.detachedUpgrade(for: $0) }
    return detached
}

/// The real-time settings, read (and checked) before the gateway builds anything.
private struct ProtocolSettings {
    var realtime: RealtimeSettings
    var admission: RealtimeAdmission
    var socketIO: SocketIOSettings
    var native: NativeSettings
    var stomp: StompSettings

    init(_ settings: ServiceSettings) throws {
        realtime = try RealtimeSettings(settings)
        admission = try RealtimeAdmission(settings)
        socketIO = try SocketIOSettings(settings)
        native = try NativeSettings(settings)
        stomp = try StompSettings(settings)
    }
}
