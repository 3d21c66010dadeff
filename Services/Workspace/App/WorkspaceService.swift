import Configuration
import Database
import Events
import Hummingbird
import Logging
import ServiceCatalog
import ServiceKit
import Uploads

/// `workspace`: Workspaces, members, channels, categories and invites; produces `workspace.v1`,
/// consumes `auth.user.v1` (member profiles), `payment.v1` (coin saga replies), `presence.v1`
/// (the online status Smooth's member list shows) and `chat.read.v1` (joins by reading).
public enum WorkspaceService {
    public static let name = ServiceEntry.workspace.name
    /// Defaults below environment variables and command-line flags (docs/configuration.md).
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = [
        "http.port": ConfigValue(.int(ServiceEntry.workspace.port), isSecret: false),
        "workspace.creation-cost": 0,
        "workspace.saga-timeout-ms": 10_000,
        "workspace.files-directory": "data/workspace-files",
    ]
    /// The service's own schema (versions from 100; the outbox and inbox come from the platform).
    public static let migrations: [Migration] = WorkspaceMigrations.all
}

/// Builds the `workspace` application: platform services, consumers, routes.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let workspaceSettings = try WorkspaceSettings(settings)
    let images = try ImageDirectory(directory: workspaceSettings.filesDirectory, setting: "workspace.files-directory", urlPrefix: CoverImages.urlPrefix)
    var platform = try await ServicePlatform.make(settings: settings, migrations: WorkspaceService.migrations, logger: logger)
    let postgres = platform.postgres
    let store = WorkspaceStore(logger: logger)
    let saga = CreationSaga(postgres: postgres, store: store, logger: logger)
    let api = WorkspaceAPI(
        postgres: postgres, workspaces: store, channels: ChannelStore(logger: logger), categories: CategoryStore(logger: logger),
        invites: InviteStore(logger: logger), images: images, settings: workspaceSettings, saga: saga, logger: logger
    )
    platform.addGatedService { saga }
    platform.addInboxConsumer(group: "workspace.profiles", topics: [.authUser], router: api.profileProjection)
    platform.addInboxConsumer(group: "workspace.saga", topics: [.payment], router: api.sagaReplies)
    // Join requests ride on the presence consumer: one poller less (each idle consumer costs CPU).
    var presence = EventRouter()
    PresenceProjection.register(into: &presence)
    WorkspaceAPI.registerJoinRequests(api, into: &presence)
    platform.addInboxConsumer(group: "workspace.presence", topics: [.presence, .chatRead], router: presence)
    let router = platform.makeRouter()
    api.add(to: router)
    return platform.makeApplication(responder: router.buildResponder())
}
