import Configuration
import Database
import Hummingbird
import Logging
import ServiceKit

/// `payment`: Coin store, PortOne verification and the coin ledger; produces `payment.v1`.
public enum PaymentService {
    public static let name = "payment"
    /// Defaults below environment variables and command-line flags (docs/configuration.md).
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = ["http.port": 8086]
    /// The service's own schema (versions from 100; the outbox and inbox come from the platform).
    public static let migrations: [Migration] = []
}

/// Builds the `payment` application: platform services, routes, and the startup step.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let platform = try await ServicePlatform.make(settings: settings, migrations: PaymentService.migrations, logger: logger)
    let router = platform.makeRouter()
    return try platform.makeApplication(responder: router.buildResponder())
}
