import Configuration
import Database
import Hummingbird
import Logging
import ServiceKit

/// `workspace`: Workspaces, members, channels, categories and invites; produces `workspace.v1`.
public enum WorkspaceService {
    public static let name = "workspace"
    /// Defaults below environment variables and command-line flags (docs/configuration.md).
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = ["http.port": 8082]
    /// The service's own schema (versions from 100; the outbox and inbox come from the platform).
    public static let migrations: [Migration] = []
}

/// Builds the `workspace` application: platform services, routes, and the startup step.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let platform = try await ServicePlatform.make(settings: settings, migrations: WorkspaceService.migrations, logger: logger)
    let router = platform.makeRouter()
    return try platform.makeApplication(responder: router.buildResponder())
}
