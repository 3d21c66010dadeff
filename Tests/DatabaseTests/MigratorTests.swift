import Common
import Database
import Logging
import PostgresNIO
import Testing
import TestSupport

@Suite("Migrations")
struct MigratorTests {
    static let migrations =
        PlatformMigrations.all + [
            Migration(100, "widgets", "CREATE TABLE widgets (id int PRIMARY KEY); CREATE INDEX widgets_id ON widgets (id);"),
            Migration(101, "widget names", "ALTER TABLE widgets ADD COLUMN name text; SELECT pg_sleep(0.3);"),
        ]

    @Test("two migrators racing on one database both succeed and apply each migration once")
    func concurrentMigrators() async throws {
        let db = try await TestDatabase.create()
        // Two independent clients = two server sessions, as two processes starting together.
        let first = db.configuration.makeClient(logger: TestDatabase.logger)
        let second = db.configuration.makeClient(logger: TestDatabase.logger)
        let results = try await TestDatabase.withRunningClient(first) { a in
            try await TestDatabase.withRunningClient(second) { b in
                async let x = Migrator(Self.migrations).migrate(client: a, logger: TestDatabase.logger)
                async let y = Migrator(Self.migrations).migrate(client: b, logger: TestDatabase.logger)
                return try await [x, y]
            }
        }
        // Exactly one of them applied everything, the other found nothing to do.
        #expect(results.map(\.count).sorted() == [0, Self.migrations.count])
        let count = try await db.withClient { client in
            var n = 0
            for try await c in try await client.query("SELECT count(*)::int FROM schema_migrations").decode(Int.self) { n = c }
            return n
        }
        #expect(count == Self.migrations.count)
        try await db.drop()
    }

    @Test("a failing migration rolls back and reports which one failed")
    func failingMigration() async throws {
        let db = try await TestDatabase.create()
        let bad = [Migration(1, "ok", "CREATE TABLE a (id int)"), Migration(2, "broken", "CREATE TABLE b (id nosuchtype)")]
        await #expect(throws: MigrationError.self) {
            try await db.withClient { try await Migrator(bad).migrate(client: $0, logger: TestDatabase.logger) }
        }
        let tables = try await db.withClient { client in
            var names: [String] = []
            for try await n in try await client.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1").decode(String.self) {
                names.append(n)
            }
            return names
        }
        #expect(tables == ["a", "schema_migrations"])
        // Fixing the migration lets it apply on the next start.
        let fixed = [bad[0], Migration(2, "broken", "CREATE TABLE b (id int)")]
        let applied = try await db.withClient { try await Migrator(fixed).migrate(client: $0, logger: TestDatabase.logger) }
        #expect(applied == [2])
        try await db.drop()
    }
}
