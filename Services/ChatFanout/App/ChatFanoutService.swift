import Configuration
import Database
import Hummingbird
import Logging
import ServiceKit

/// `chat-fanout`: Turns `chat.message.v1` into one delivery per interested gateway on `gateway.delivery.v1`.
public enum ChatFanoutService {
    public static let name = "chat-fanout"
    /// Defaults below environment variables and command-line flags (docs/configuration.md).
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = ["http.port": 8084]
}

/// Builds the `chat-fanout` application: platform services, routes, and the startup step.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let platform = try await ServicePlatform.make(settings: settings, migrations: nil, logger: logger)
    let router = platform.makeRouter()
    return try platform.makeApplication(responder: router.buildResponder())
}
