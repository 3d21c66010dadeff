import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing

extension Stack {
    /// Auth, payment (talking to a fake PortOne) and the gateway; workspace too when asked.
    static func store(
        workspace: Bool = false, portOneTimeoutMilliseconds: Int = 2_000,
        workspaceEnvironment: [String: String] = [:], gatewayEnvironment: [String: String] = [:],
        _ body: @escaping @Sendable (Stack, FakePortOne) async throws -> Void
    ) async throws {
        try await FakePortOne.run { fake, url in
            let payment = StackService.payment(env: FakePortOne.environment(url: url, timeoutMilliseconds: portOneTimeoutMilliseconds))
            let services: [StackService] = workspace ? [.auth, .workspace(env: workspaceEnvironment), payment] : [.auth, payment]
            try await Stack.run(services: services, gateway: gatewayEnvironment) { s in
                try await body(s, fake)
            }
        }
    }

    /// `POST /v1/store/pay/validation` with a JSON body (as WSX sends it).
    func validate(_ user: User, impUID: String, merchantUID: String) async throws -> TestResponse {
        try await send(.post, "/v1/store/pay/validation", user, json: #"{"imp_uid":"\#(impUID)","merchant_uid":"\#(merchantUID)"}"#)
    }

    /// The same with a form-urlencoded body (as LILAC sends it).
    func validateForm(_ user: User, _ body: String) async throws -> TestResponse {
        try await client.execute(
            uri: "/v1/store/pay/validation", method: .post,
            headers: headers(token: user.token, contentType: "application/x-www-form-urlencoded"), body: ByteBuffer(string: body)
        )
    }

    /// `sesacCoin` of `/users/me`.
    func sesacCoin(_ user: User) async throws -> Int? {
        jsonObject(try await get("/v1/users/me", user))?["sesacCoin"] as? Int
    }

    /// Waits until `/users/me` shows `coins` (auth's projection of `payment.v1`).
    func waitForCoins(_ user: User, _ coins: Int, timeout: Duration = .seconds(15)) async throws {
        try await eventually("/users/me shows \(coins) coins", timeout: timeout) { try await sesacCoin(user) == coins }
    }

    /// Buys `item` for `user` through the whole validation path and returns the response.
    @discardableResult
    func buy(_ user: User, _ fake: FakePortOne, item: String = "100 Coin", price: Double = 1000) async throws -> TestResponse {
        let impUID = "imp_\(UUID().uuidString.prefix(12))"
        let merchantUID = "ios_\(Stack.appKey)_\(UUID().uuidString.prefix(8))"
        fake.paid(impUID, merchantUID: merchantUID, name: item, amount: price)
        let response = try await validate(user, impUID: impUID, merchantUID: merchantUID)
        #expect(response.status == .ok, "buy: \(String(buffer: response.body))")
        return response
    }
}

/// What the payment database says about a user's coins.
struct LedgerTotals: Sendable, Equatable {
    var balance: Int
    var credits: Int
    var debits: Int
    var refunds: Int
    var entries: Int

    /// Reads the user's balance and sums their ledger by kind, and checks the ledger is
    /// consistent: the entries sum to the balance, and the latest entry's `balance_after` is it.
    static func read(_ db: PostgresClient, user: String) async throws -> LedgerTotals {
        var totals = LedgerTotals(balance: 0, credits: 0, debits: 0, refunds: 0, entries: 0)
        guard let id = UUID(uuidString: user) else {
            Issue.record("not a user id: \(user)")
            return totals
        }
        // One snapshot for both reads: the service may be writing meanwhile.
        let logger = Logger(label: "ledger-totals")
        let (balance, entries) = try await db.withTransaction(logger: logger) { c in
            _ = try await c.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", logger: logger)
            let balance = try await c.query("SELECT balance FROM coin_balances WHERE user_id = \(id)", logger: logger)
                .decode(Int64.self).reduce(0, +)
            let entries = try await c.query(
                "SELECT kind, delta, balance_after FROM coin_ledger WHERE user_id = \(id) ORDER BY version", logger: logger
            ).decode((String, Int64, Int64).self).reduce(into: [(String, Int64, Int64)]()) { $0.append($1) }
            return (balance, entries)
        }
        totals.balance = Int(balance)
        var latest: Int64?
        for (kind, delta, after) in entries {
            totals.entries += 1
            latest = after
            switch kind {
            case "credit": totals.credits += Int(delta)
            case "debit": totals.debits += Int(-delta)
            default: totals.refunds += Int(delta)
            }
        }
        #expect(totals.credits - totals.debits + totals.refunds == totals.balance, "ledger sums to the balance")
        #expect(latest.map(Int.init) ?? 0 == totals.balance, "latest balance_after is the balance")
        return totals
    }
}
