import Configuration
import Database
import Hummingbird
import Logging
import ServiceCatalog
import ServiceKit

/// `presence`: Online state from `gateway.session.v1`; produces `presence.v1`.
public enum PresenceService {
    public static let name = ServiceEntry.presence.name
    /// Defaults below environment variables and command-line flags (docs/configuration.md).
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = ["http.port": ConfigValue(.int(ServiceEntry.presence.port), isSecret: false)]
}

/// Builds the `presence` application: platform services, routes, and the startup step.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let platform = try await ServicePlatform.make(settings: settings, logger: logger)
    let router = platform.makeRouter()
    return platform.makeApplication(responder: router.buildResponder())
}
