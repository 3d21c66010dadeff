import Configuration
import Database
import Foundation
import Hummingbird
import Logging
import ServiceKit

/// `auth`: Accounts, credentials, tokens, device tokens and friends; produces `auth.user.v1`.
public enum AuthService {
    public static let name = "auth"
    /// Defaults below environment variables and command-line flags (docs/configuration.md).
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = [
        "http.port": 8081,
        "auth.access-ttl-seconds": 600,
        "auth.refresh-ttl-seconds": 2_592_000,
        "auth.bcrypt-cost": 10,
    ]
    /// The service's own schema (versions from 100; the outbox and inbox come from the platform).
    public static let migrations: [Migration] = AuthMigrations.all
}

/// Builds the `auth` application: platform services, routes, and the startup step.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let authSettings = try AuthSettings(settings)
    let platform = try await ServicePlatform.make(settings: settings, migrations: AuthService.migrations, logger: logger)
    guard let postgres = platform.postgres else { throw StartupError("auth needs DATABASE_URL") }
    let store = UserStore(postgres: postgres, logger: logger)
    let hasher = PasswordHasher(cost: authSettings.bcryptCost)
    let routes = AccountRoutes(
        postgres: postgres, store: store, tokens: try await Tokens(settings: authSettings, store: store), hasher: hasher,
        logger: logger, dummyHash: try await hasher.hash(UUID().uuidString)
    )
    let router = platform.makeRouter()
    routes.add(to: router)
    return try platform.makeApplication(responder: router.buildResponder())
}
