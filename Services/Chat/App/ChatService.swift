import Configuration
import Database
import Hummingbird
import Logging
import ServiceKit

/// `chat`: Channel and DM messages, files and read cursors; produces `chat.message.v1` and `chat.read.v1`.
public enum ChatService {
    public static let name = "chat"
    /// Defaults below environment variables and command-line flags (docs/configuration.md).
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = ["http.port": 8083]
    /// The service's own schema (versions from 100; the outbox and inbox come from the platform).
    public static let migrations: [Migration] = []
}

/// Builds the `chat` application: platform services, routes, and the startup step.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let platform = try await ServicePlatform.make(settings: settings, migrations: ChatService.migrations, logger: logger)
    let router = platform.makeRouter()
    return try platform.makeApplication(responder: router.buildResponder())
}
