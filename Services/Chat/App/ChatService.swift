import Configuration
import Foundation
import Database
import Events
import Hummingbird
import Logging
import ServiceCatalog
import ServiceKit
import Uploads

/// `chat`: Channel and DM messages, files and read cursors; produces `chat.message.v1` and
/// `chat.read.v1`; consumes `workspace.v1` (membership read model), `auth.user.v1` (profiles,
/// friendships) and `presence.v1` (who is online, for room lists).
public enum ChatService {
    public static let name = ServiceEntry.chat.name
    /// Defaults below environment variables and command-line flags (docs/configuration.md).
    public static let defaults: [AbsoluteConfigKey: ConfigValue] = [
        "http.port": ConfigValue(.int(ServiceEntry.chat.port), isSecret: false), "chat.files-directory": "data/chat-files",
    ]
    /// The service's own schema (versions from 100; the outbox and inbox come from the platform).
    public static let migrations: [Migration] = ChatMigrations.all
}

/// Builds the `chat` application: platform services, read-model consumers, routes.
public func buildApplication(settings: ServiceSettings, logger: Logger) async throws -> some ApplicationProtocol {
    let files = try ChatFiles(directory: try settings.string("chat.files-directory"))
    var platform = try await ServicePlatform.make(settings: settings, migrations: ChatService.migrations, logger: logger)
    let postgres = platform.postgres
    var profiles = EventRouter()
    ProfileProjection.register(into: &profiles)
    FriendProjection.register(into: &profiles)
    // Who is online rides on the same consumer: one poller less (each idle consumer costs CPU).
    PresenceProjection.register(into: &profiles)
    platform.addInboxConsumer(group: "chat.profiles", topics: [.authUser, .presence], router: profiles)
    var membership = EventRouter()
    MembershipProjection.register(into: &membership)
    platform.addInboxConsumer(group: "chat.membership", topics: [.workspace], router: membership)
    let roomIcons = try ImageDirectory(
        directory: files.directory.appendingPathComponent("room-icons").path, setting: "chat.files-directory", urlPrefix: ChatAPI.roomIconPrefix)
    let router = platform.makeRouter()
    ChatAPI(
        postgres: postgres, messages: MessageStore(logger: logger), rooms: RoomStore(logger: logger),
        personalRooms: PersonalRooms(store: PersonalRoomStore(logger: logger), logger: logger), roomIcons: roomIcons,
        reactions: ReactionStore(logger: logger),
        cursors: ReadCursorStore(logger: logger), files: files, logger: logger, relay: platform.relay
    ).add(to: router)
    return platform.makeApplication(responder: router.buildResponder())
}
