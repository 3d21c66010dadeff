import Common
import Database
import Foundation
import PostgresNIO
import Testing
import TestSupport

/// Pooled work while an administrator keeps terminating the database's backends: every query
/// either completes or fails; none waits for ever. postgres-nio writes a query to its channel
/// without a write promise, and a query written just as the server closed the connection waits
/// forever; with `withConnection` itself, 8 of 8 workers were stuck within 15 s, plain queries and
/// prepared statements alike (`LiveConnections.swift`).
@Suite("Pooled queries across terminated backends", .serialized)
struct TerminatedBackendsStressTests {
    struct InsertValue: PostgresPreparedStatement {
        typealias Row = ()
        static let sql = "INSERT INTO stress (v) VALUES ($1)"
        static let bindingDataTypes: [PostgresDataType] = [.int8]
        var value: Int64
        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(value)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> Row {}
    }

    enum Way: String, CaseIterable, Sendable {
        case query, preparedStatement, transaction, liveQuery
    }

    /// One insert the way `way` says, through the product's pooled wrappers.
    static func insert(_ value: Int64, _ way: Way, _ client: PostgresClient, leased: Locked<Bool>) async throws {
        let logger = TestDatabase.logger
        switch way {
        case .query:
            try await client.withLiveConnection { connection in
                leased.withLock { $0 = true }
                _ = try await connection.query("INSERT INTO stress (v) VALUES (\(value))", logger: logger)
            }
        case .preparedStatement:
            try await client.withLiveConnection { connection in
                leased.withLock { $0 = true }
                _ = try await connection.execute(InsertValue(value: value), logger: logger)
            }
        case .transaction:
            try await client.withLiveTransaction(logger: logger) { connection in
                leased.withLock { $0 = true }
                _ = try await connection.query("INSERT INTO stress (v) VALUES (\(value))", logger: logger)
                _ = try await connection.query("INSERT INTO stress (v) VALUES (\(-value))", logger: logger)
            }
        case .liveQuery:
            try await client.liveQuery("INSERT INTO stress (v) VALUES (\(value))", logger: logger)
        }
    }

    @Test("8 workers for 10 s, backends terminated every 150 ms: no query waits 40 s", arguments: Way.allCases)
    func noQueryWaitsForever(way: Way) async throws {
        let db = try await TestDatabase.create(prefix: "terminated")
        let name = db.name
        let outcome = try await db.withClient { client in
            _ = try await client.query("CREATE TABLE stress (id bigserial PRIMARY KEY, v bigint NOT NULL)", logger: TestDatabase.logger)
            let counts = Locked((completed: 0, failed: 0, stuck: 0))
            let stop = ContinuousClock.now + .seconds(10)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        var n: Int64 = 0
                        while ContinuousClock.now < stop {
                            n += 1
                            let value = Int64(worker) * 1_000_000 + n
                            let leased = Locked(false)
                            do {
                                try await withTimeout(.seconds(40), "an insert") {
                                    try await Self.insert(value, way, client, leased: leased)
                                }
                                counts.withLock { $0.completed += 1 }
                            } catch is TimeoutError {
                                print("stuck: worker \(worker) insert \(n) leased \(leased.value)")
                                counts.withLock { $0.stuck += 1 }
                            } catch {
                                counts.withLock { $0.failed += 1 }
                                try await Task.sleep(for: .milliseconds(20))
                            }
                        }
                    }
                }
                group.addTask {
                    let server = try TestDatabase.serverConfiguration
                    try await TestDatabase.withRunningClient(server.makeClient(logger: TestDatabase.logger)) { admin in
                        while ContinuousClock.now < stop {
                            try await Task.sleep(for: .milliseconds(150))
                            _ = try? await admin.query(
                                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \(name) AND pid <> pg_backend_pid()",
                                logger: TestDatabase.logger)
                        }
                    }
                }
                do { try await group.waitForAll() } catch { print("group error: \(error)"); throw error }
            }
            return counts.value
        }
        try? await db.drop()
        print("\(way): \(outcome.completed) completed, \(outcome.failed) failed, \(outcome.stuck) waited 40 s")
        #expect(outcome.completed > 100)
        #expect(outcome.stuck == 0, "queries that waited 40 s without an answer (\(way))")
    }
}
