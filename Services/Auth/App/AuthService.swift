import Configuration
import Database
import Hummingbird
import Logging
import ServiceKit

/// `auth`: Accounts, credentials, tokens, device tokens and friends; produces `auth.user.v1`.
public enum AuthService {
    public static let name = "auth"
    /// Defaults below environment variables and command-line flags (docs/configuration.md).
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = ["http.port": 8081]
    /// The service's own schema (versions from 100; the outbox and inbox come from the platform).
    public static let migrations: [Migration] = []
}

/// Builds the `auth` application: platform services, routes, and the startup step.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let platform = try await ServicePlatform.make(settings: settings, migrations: AuthService.migrations, logger: logger)
    let router = platform.makeRouter()
    return try platform.makeApplication(responder: router.buildResponder())
}
