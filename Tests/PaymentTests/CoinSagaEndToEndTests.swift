import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing

/// The workspace-creation coin saga with the real payment service behind the gateway.
@Suite("Coin saga end to end")
struct CoinSagaEndToEndTests {
    @Test("100 concurrent creations with coins for 30: 30 workspaces, 70 × E21, balance 0, ledger sums match")
    func hundredCreations() async throws {
        try await Stack.store(
            workspace: true,
            workspaceEnvironment: ["WORKSPACE_CREATION_COST": "10", "WORKSPACE_SAGA_TIMEOUT_MS": "60000"],
            gatewayEnvironment: ["GATEWAY_USER_BURST": "1000", "GATEWAY_USER_RATE_PER_SECOND": "1000"]
        ) { s, fake in
            // Warm-up with another user: the consumer groups (payment's saga, workspace's
            // replies, auth's balances) join before the race starts.
            let warm = try await s.user()
            try await s.buy(warm, fake, item: "10 Coin", price: 100)
            try await s.waitForCoins(warm, 10)
            #expect(outcome(try await s.multipartRequest(.post, "/v1/workspaces", warm, fields: ["name": "warm-up"])) == "200")
            try await s.waitForCoins(warm, 0)

            let user = try await s.user()
            for _ in 0..<3 { try await s.buy(user, fake) }  // 3 × 100 coins = 30 creations at 10
            try await s.waitForCoins(user, 300)

            // Each creation on a connection of its own: they race at the gateway and the
            // services, not queue on one connection.
            let racing = s.onOwnConnections()
            let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                for i in 0..<100 {
                    group.addTask { outcome(try await racing.multipartRequest(.post, "/v1/workspaces", user, fields: ["name": "race-\(i)"])) }
                }
                return try await group.reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
            }
            #expect(outcomes == ["200": 30, "400 E21": 70])
            #expect(try #require(jsonArray(try await s.get("/v1/workspaces", user))).count == 30)
            try await s.waitForCoins(user, 0)

            let payment = try #require(s.paymentDatabase)
            let totals = try await LedgerTotals.read(payment, user: user.id)
            #expect(totals == LedgerTotals(balance: 0, credits: 300, debits: 300, refunds: 0, entries: 33))
            var decided: [String: Int64] = [:]
            for try await (outcome, count) in try await payment.query(
                "SELECT outcome, count(*) FROM debit_requests WHERE user_id = \(UUID(uuidString: user.id)) GROUP BY outcome"
            ).decode((String, Int64).self) {
                decided[outcome] = count
            }
            #expect(decided == ["debited": 30, "rejected": 70])
            // Nothing is left pending in the workspace service.
            let workspace = try #require(s.workspaceDatabase)
            let states = try await workspace.query("SELECT state FROM workspaces WHERE owner_id = \(UUID(uuidString: user.id))").decode(String.self)
                .reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
            #expect(states == ["active": 30])
        }
    }
}
