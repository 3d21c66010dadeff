import Common
import Database
import Foundation
import PostgresNIO
import Testing
import TestSupport

/// `abandoningOnClose` on a connection that lives for days (the outbox relay's leader runs it for
/// every drain): nothing it registers outlives the work, and closing still abandons the work
/// that is waiting.
@Suite("abandoningOnClose on a long-lived connection")
struct CloseWatchTests {
    @Test("100 000 calls on one connection leave no handler registered; a terminated backend abandons the waiting work")
    func nothingOutlivesTheWork() async throws {
        let db = try await TestDatabase.create(prefix: "closewatch")
        try await db.withClient { client in
            try await client.withConnection { connection in
                let before = ProcessStats.rssKiB(pid: getpid()) ?? 0
                for i in 0..<100_000 { _ = try await connection.abandoningOnClose { i } }
                let grown = (ProcessStats.rssKiB(pid: getpid()) ?? 0) - before
                print("100 000 abandoningOnClose calls: resident memory grew \(grown) KiB")
                #expect(CloseWatches.shared.pendingHandlers(on: connection) == 0)
                // A close-future callback per call grew this by ~260 MB (2.6 KiB a call); with one
                // watch per connection it grows by well under 1 MB. The bound leaves room for the
                // tests running alongside.
                #expect(grown < 100 << 10, "resident memory grew \(grown >> 10) MiB")

                var pid: Int32 = 0
                for try await value in try await connection.query("SELECT pg_backend_pid()", logger: TestDatabase.logger).decode(Int32.self) {
                    pid = value
                }
                let waiting = Task { try await connection.abandoningOnClose { try await Task.sleep(for: .seconds(60)) } }
                let deadline = ContinuousClock.now + .seconds(5)
                while CloseWatches.shared.pendingHandlers(on: connection) != 1, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                }
                #expect(CloseWatches.shared.pendingHandlers(on: connection) == 1)
                let server = try TestDatabase.serverConfiguration
                try await TestDatabase.withRunningClient(server.makeClient(logger: TestDatabase.logger)) { [pid] admin in
                    _ = try await admin.query("SELECT pg_terminate_backend(\(pid))", logger: TestDatabase.logger)
                }
                let started = ContinuousClock.now
                await #expect(throws: PostgresConnectionClosed.self) { try await waiting.value }
                #expect(ContinuousClock.now - started < .seconds(10))
                #expect(CloseWatches.shared.pendingHandlers(on: connection) == 0)
            }
        }
        try? await db.drop()
    }
}
