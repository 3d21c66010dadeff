import Database
import Events
import Logging
import PostgresNIO
import ServiceLifecycle

/// Users who existed before integer aliases (migrations 105 and 108) get one `UserProfileUpdated`
/// carrying their alias and tag, so the other services' profile projections (which Smooth's
/// surfaces read) know them without waiting for the user's next edit. Runs once at start, in
/// batches; replicas share the rows; what a failed run leaves is taken up by the next start.
struct AliasAnnouncement: Service {
    let postgres: PostgresClient
    let store: UserStore
    let logger: Logger
    static let batchSize = 200

    func run() async throws {
        do {
            let announced = try await announcePending()
            if announced > 0 { logger.info("announced the aliases of existing users", metadata: ["users": "\(announced)"]) }
        } catch {
            logger.error("announcing aliases of existing users failed; the next start retries", metadata: ["error": "\(String(reflecting: error))"])
        }
        // Nothing more to do; stay up as the other services do until shutdown.
        try? await gracefulShutdown()
    }

    /// Publishes every pending user's profile (alias and tag included); returns how many.
    func announcePending() async throws -> Int {
        var total = 0
        while true {
            let count = try await postgres.withLiveTransaction(logger: logger) { connection -> Int in
                let users = try await store.takeUnannouncedAliases(limit: Self.batchSize, on: connection)
                for user in users {
                    try await Outbox.append(CloudEvent(source: AccountRoutes.source, data: user.profileUpdatedEvent), on: connection, logger: logger)
                }
                return users.count
            }
            total += count
            if count < Self.batchSize { return total }
        }
    }
}
