import Common
import Database
import Foundation
import PostgresNIO
import Testing
import TestSupport

/// The relay outlives its database connection: PostgreSQL restarted (or the relay's backend
/// terminated by an administrator) while events keep being written — every event is still
/// published, by the same relay, once the database answers again.
@Suite("Outbox relay across a lost database connection", .serialized)
struct OutboxRecoveryTests {
    @Test("the relay's backends terminated three times mid-stream: all 600 events published")
    func terminatedBackends() async throws {
        let f = try await OutboxFixture.make(prefix: "outbox-recovery")
        let (cluster, topic, producer) = (f.cluster, f.topic, f.producer)
        let database = f.db.name
        try await f.run { client in
            var config = OutboxRelay.Configuration()
            config.standbyRetryInterval = .milliseconds(200)
            let relay = OutboxRelay(postgres: client, producer: producer, logger: TestDatabase.logger, configuration: config)
            let task = Task { try await relay.run() }
            defer { task.cancel() }
            let server = try TestDatabase.serverConfiguration
            for round in 0..<3 {
                try await writeEvents(client, topic: topic, count: 100, startSeq: round * 200)
                // Every other backend of this database, the relay's LISTEN connection included.
                try await TestDatabase.withRunningClient(server.makeClient(logger: TestDatabase.logger)) { admin in
                    _ = try await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \(database) AND pid <> pg_backend_pid()")
                }
                // Writes right after the cut (the client reconnects for them).
                let deadline = ContinuousClock.now + .seconds(20)
                while (try? await writeEvents(client, topic: topic, count: 100, startSeq: round * 200 + 100)) == nil {
                    guard ContinuousClock.now < deadline else { throw TimeoutError(what: "writes after the cut") }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            let events = try await collect(cluster, topic: topic, group: "g-\(topic)", timeout: .seconds(60)) { distinctCount($0) >= 600 }
            #expect(distinctCount(events) == 600)
            #expect(try await count(client, "SELECT count(*)::int FROM outbox WHERE published_at IS NULL") == 0)
        }
    }
}
