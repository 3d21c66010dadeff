import Configuration
import Database
import Hummingbird
import Logging
import ServiceKit

/// `gateway`: Terminates client REST and WebSockets and routes to the services (REST edge and real-time protocols arrive with their issues).
public enum GatewayService {
    public static let name = "gateway"
    /// Defaults below environment variables and command-line flags (docs/configuration.md).
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = ["http.port": 8080]
}

/// Builds the `gateway` application: platform services, routes, and the startup step.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let platform = try await ServicePlatform.make(settings: settings, migrations: nil, logger: logger)
    let router = platform.makeRouter()
    return try platform.makeApplication(responder: router.buildResponder())
}
