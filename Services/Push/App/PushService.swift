import AsyncHTTPClient
import Configuration
import Database
import Events
import Hummingbird
import Logging
import NIOSSL
import OutboundHTTP
import ServiceCatalog
import ServiceKit

/// `push`: notifications to the phones of readers who are not online. Learns device tokens from
/// `auth.user.v1`, membership from `workspace.v1`, presence from `presence.v1` and read cursors
/// from `chat.read.v1`; plans one notification per (message, device) from `chat.message.v1`, and
/// the study app's (request, accept, dodge, chat) from `study.v1`, and sends them through FCM HTTP
/// v1 (or APNs). Rules: docs/push.md.
public enum PushService {
    public static let name = ServiceEntry.push.name
    /// Defaults below environment variables and command-line flags (docs/configuration.md).
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = [
        "http.port": ConfigValue(.int(ServiceEntry.push.port), isSecret: false),
        "push.fcm-url": "https://fcm.googleapis.com",
        // The Firebase service-account JSON key; empty: FCM is off (nothing is planned for FCM tokens).
        "push.fcm-credentials-file": "",
        // APNs: on when the .p8 key file is set (then the key id, team id and topic are required).
        "push.apns-url": "https://api.push.apple.com",
        "push.apns-key-file": "",
        "push.apns-key-id": "",
        "push.apns-team-id": "",
        "push.apns-topic": "",
        // An extra trusted CA (PEM) for a private or test APNs endpoint; empty: the system's roots.
        "push.apns-ca-file": "",
        "push.max-attempts": 8,
        "push.concurrency": 32,
        "push.request-timeout-ms": 10_000,
        // A leased notification whose replica died is sent again after this (longer than a request).
        "push.lease-seconds": 60,
        // The planner's poll collects chat messages this long after its first, to plan them together.
        "push.planner-linger-ms": 20,
    ]
    /// The service's own schema (versions from 100; the outbox and inbox come from the platform).
    public static let migrations: [Migration] = PushMigrations.all
}

/// Builds the `push` application: read models, the planner, the delivery worker, the settings routes.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let push = try PushSettings(settings)
    var platform = try await ServicePlatform.make(settings: settings, migrations: PushService.migrations, logger: logger)
    let httpClient = HTTPClient(
        eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(5))))
    platform.addService(HTTPClientService(client: httpClient))
    var senders: [PushProvider: any PushSender] = [:]
    if let account = push.fcmAccount {
        senders[.fcm] = try await FCMClient(client: httpClient, baseURL: push.fcmURL, account: account, timeout: push.requestTimeout, logger: logger)
        logger.info("FCM is on", metadata: ["push.fcm": "\(account)"])
    } else {
        logger.warning("FCM is off: push.fcm-credentials-file (PUSH_FCM_CREDENTIALS_FILE) is not set")
    }
    if let apns = push.apns {
        // HTTP/2 (negotiated by ALPN) over TLS, on a client of its own (its own trust roots).
        var tls = TLSConfiguration.makeClientConfiguration()
        if let ca = apns.caPEM { tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMBytes(Array(ca.utf8)))] }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow, timeout: .init(connect: .seconds(5)))
        configuration.httpVersion = .automatic
        let apnsClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        platform.addService(HTTPClientService(client: apnsClient))
        senders[.apns] = try await APNsClient(client: apnsClient, settings: apns, timeout: push.requestTimeout)
        logger.info("APNs is on", metadata: ["push.apns": "\(apns)"])
    } else {
        logger.warning("APNs is off: push.apns-key-file (PUSH_APNS_KEY_FILE) is not set")
    }

    // One inbox consumer group per source: each read model and the planner move at their own pace.
    let planner = NotificationPlanner(providers: Set(senders.keys))
    let consumers: [(group: String, topic: Topic, register: (inout EventRouter) -> Void, linger: Int)] = [
        ("push.device-tokens", .authUser, PushProjections.registerDeviceTokens, 0),
        ("push.membership", .workspace, PushProjections.registerMembership, 0),
        ("push.presence", .presence, PushProjections.registerPresence, 0),
        ("push.read-cursors", .chatRead, PushProjections.registerReadCursors, 0),
        ("push.messages", .chatMessage, planner.register, push.plannerLingerMilliseconds),
        ("push.study", .study, planner.registerStudy, 0),
    ]
    for consumer in consumers {
        var router = EventRouter()
        consumer.register(&router)
        platform.addInboxConsumer(group: consumer.group, topics: [consumer.topic], router: router, batchLingerMilliseconds: consumer.linger)
    }

    let worker = DeliveryWorker(postgres: platform.postgres, senders: senders, settings: push, logger: logger)
    platform.addGatedService { worker }  // after the migrations

    let router = platform.makeRouter()
    NotificationSettingsRoutes(postgres: platform.postgres, logger: logger).add(to: router)
    return platform.makeApplication(responder: router.buildResponder())
}
