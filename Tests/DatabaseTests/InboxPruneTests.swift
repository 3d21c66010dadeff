import Common
import Database
import Foundation
import PostgresNIO
import Testing
import TestSupport

@Suite("Inbox pruning")
struct InboxPruneTests {
    /// Inserts `count` processed ids of `consumer`, processed `age` ago.
    static func insert(_ client: PostgresClient, consumer: String, count: Int, age: String) async throws {
        _ = try await client.query(
            """
            INSERT INTO inbox (consumer, event_id, processed_at)
            SELECT \(consumer), gen_random_uuid(), now() - \(age)::interval FROM generate_series(1, \(count))
            """)
    }

    @Test("a pass removes processed ids older than the retention (in batches, every consumer), keeps newer ones")
    func pruneOldIds() async throws {
        let db = try await TestDatabase.create()
        try await db.withClient { client in
            try await Migrator(PlatformMigrations.all).migrate(client: client, logger: TestDatabase.logger)
            try await Self.insert(client, consumer: "chat.profiles", count: 1_500, age: "9 days")
            try await Self.insert(client, consumer: "chat.membership", count: 1_000, age: "30 days")
            try await Self.insert(client, consumer: "chat.profiles", count: 10, age: "7 days 23 hours")
            try await Self.insert(client, consumer: "chat.membership", count: 10, age: "1 minute")

            var configuration = InboxPruner.Configuration()
            configuration.retention = .seconds(8 * 24 * 3600)
            configuration.batchSize = 400
            let pruner = InboxPruner(postgres: client, logger: TestDatabase.logger, configuration: configuration)
            #expect(try await pruner.prune() == 2_500)
            #expect(try await count(client, "SELECT count(*)::int FROM inbox") == 20)
            #expect(try await count(client, "SELECT count(*)::int FROM inbox WHERE processed_at < now() - interval '8 days'") == 0)
            #expect(try await pruner.prune() == 0, "nothing left to prune")
            #expect(try await count(client, "SELECT count(*)::int FROM inbox") == 20)
        }
        try await db.drop()
    }

    @Test("the default retention outlasts the topics' 7 days")
    func defaultRetention() {
        #expect(InboxPruner.Configuration().retention > .seconds(7 * 24 * 3600))
    }
}
