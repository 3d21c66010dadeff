import Configuration
import Database
import Events
import Hummingbird
import Logging
import ServiceCatalog
import ServiceKit

/// `presence`: who is online. Reads `gateway.session.v1` whole (sessions and gateway liveness;
/// every replica its own table, rebuilt at start), publishes each user's status to the
/// compacted `presence.v1` when it changes (one leading replica, through the outbox), keeps
/// workspace membership from `workspace.v1`, and answers `GET /v1/workspaces/{w}/presence`.
/// Rules and timings: docs/presence.md.
public enum PresenceService {
    public static let name = ServiceEntry.presence.name
    /// Defaults below environment variables and command-line flags (docs/configuration.md).
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = [
        "http.port": ConfigValue(.int(ServiceEntry.presence.port), isSecret: false),
        // A gateway silent for this long is dead, and so are its sessions (three of its 5 s
        // announcements missed).
        "presence.gateway-timeout-ms": 15_000,
        // How often the leader compares who is online with what it published.
        "presence.tick-ms": 1_000,
    ]
    /// The service's own schema (versions from 100; the outbox and inbox come from the platform).
    public static let migrations: [Migration] = PresenceMigrations.all
}

/// Builds the `presence` application: the session table, the status publisher, the membership
/// read model and the REST route.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let gatewayTimeout = try settings.int("presence.gateway-timeout-ms")
    guard gatewayTimeout >= 100 else { throw StartupError("presence.gateway-timeout-ms must be at least 100, not \(gatewayTimeout)") }
    let tick = try settings.int("presence.tick-ms")
    guard (10...60_000).contains(tick) else { throw StartupError("presence.tick-ms must be 10…60000, not \(tick)") }
    var platform = try await ServicePlatform.make(settings: settings, migrations: PresenceService.migrations, logger: logger)
    var membership = EventRouter()
    WorkspaceMembersProjection.register(into: &membership)
    platform.addInboxConsumer(group: "presence.membership", topics: [.workspace], router: membership)

    let reader = try SessionReader(
        client: platform.kafkaClient, fetchWaitMilliseconds: platform.platformSettings.kafkaFetchWaitMilliseconds,
        gatewayTimeout: Double(gatewayTimeout) / 1_000, logger: logger)
    platform.addService(reader)
    var configuration = StatusPublisher.Configuration()
    configuration.tick = .milliseconds(tick)
    let publisher = StatusPublisher(postgres: platform.postgres, reader: reader, configuration: configuration, logger: logger)
    platform.addGatedService { publisher }  // after the migrations

    let router = platform.makeRouter()
    PresenceRoutes(postgres: platform.postgres, logger: logger).add(to: router)
    return platform.makeApplication(responder: router.buildResponder())
}
