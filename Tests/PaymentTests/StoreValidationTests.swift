import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import SuiteTesting
import Testing

/// The coin store through the gateway: catalogue and every path of a PortOne validation, with a
/// fake PortOne on a real port (client contract §1.11, docs/payment-api.md).
@Suite("Coin store")
struct StoreValidationTests {
    @Test("catalogue: [{item, amount}] as strings, authenticated")
    func catalogue() async throws {
        try await Stack.store { s, _ in
            let user = try await s.user()
            let list = try await s.get("/v1/store/item/list", user)
            #expect(list.status == .ok)
            let items = try #require(try JSONSerialization.jsonObject(with: Data(buffer: list.body)) as? [[String: String]])
            #expect(items == [["item": "10 Coin", "amount": "100"], ["item": "50 Coin", "amount": "500"], ["item": "100 Coin", "amount": "1000"]])
            #expect(outcome(try await s.get("/v1/store/item/list", nil)) == "401 E02")
        }
    }

    @Test("validation: paid credits once (JSON and form), E81 repeat/unknown, E82 invalid, E11 bad input, E99 when PortOne fails")
    func validation() async throws {
        try await Stack.store(portOneTimeoutMilliseconds: 2_000) { s, fake in
            let user = try await s.user()
            let other = try await s.user()
            let merchant = "ios_\(Stack.appKey)_1719837296"

            // Paid, JSON body: the billing record, coins credited, visible in /users/me.
            fake.paid("imp_100000000001", merchantUID: merchant, name: "10 Coin", amount: 100)
            let paid = try await s.validate(user, impUID: "imp_100000000001", merchantUID: merchant)
            #expect(paid.status == .ok, "\(String(buffer: paid.body))")
            let billing = try #require(jsonObject(paid))
            #expect(billing["merchant_uid"] as? String == merchant)
            #expect(billing["buyer_id"] as? String == user.id)
            #expect(billing["productName"] as? String == "10 Coin")
            #expect(billing["price"] as? Int == 100)
            #expect(billing["sesacCoin"] as? Int == 10)
            #expect(billing["paidAt"] as? String == "2024-07-01T12:34:56.000Z")
            #expect(UUID(uuidString: billing["billing_id"] as? String ?? "") != nil)
            try expectContractDates(paid)
            try await s.waitForCoins(user, 10)

            // The same payment again, by anyone: E81, nothing more credited.
            #expect(outcome(try await s.validate(user, impUID: "imp_100000000001", merchantUID: merchant)) == "400 E81")
            #expect(outcome(try await s.validate(other, impUID: "imp_100000000001", merchantUID: merchant)) == "400 E81")

            // Paid, form-urlencoded body (LILAC).
            fake.paid("imp_100000000002", merchantUID: merchant, name: "50 Coin", amount: 500)
            let form = try await s.validateForm(user, "imp_uid=imp_100000000002&merchant_uid=\(merchant)")
            #expect(form.status == .ok, "\(String(buffer: form.body))")
            #expect(jsonObject(form)?["sesacCoin"] as? Int == 50)
            try await s.waitForCoins(user, 60)

            // Unknown to PortOne: E81.
            #expect(outcome(try await s.validate(user, impUID: "imp_999999999999", merchantUID: merchant)) == "400 E81")

            // Invalid payments: E82, and a later valid look at the same imp_uid still works
            // (an invalid answer records nothing).
            let invalid: [(String, FakePortOne.Answer)] = [
                ("imp_failed", .payment(status: "failed", merchantUID: merchant, name: "10 Coin", amount: 100)),
                ("imp_ready", .payment(status: "ready", merchantUID: merchant, name: "10 Coin", amount: 100)),
                ("imp_cancelled", .payment(status: "cancelled", merchantUID: merchant, name: "10 Coin", amount: 100)),
                ("imp_cheap", .payment(status: "paid", merchantUID: merchant, name: "100 Coin", amount: 100)),
                ("imp_dear", .payment(status: "paid", merchantUID: merchant, name: "10 Coin", amount: 1000)),
                ("imp_noitem", .payment(status: "paid", merchantUID: merchant, name: "1000 Coin", amount: 100)),
                ("imp_othermerchant", .payment(status: "paid", merchantUID: "ios_someone_else", name: "10 Coin", amount: 100)),
            ]
            for (impUID, answer) in invalid {
                fake.set(impUID, answer)
                #expect(outcome(try await s.validate(user, impUID: impUID, merchantUID: merchant)) == "400 E82", "\(impUID)")
            }
            fake.paid("imp_failed", merchantUID: merchant)
            #expect(outcome(try await s.validate(user, impUID: "imp_failed", merchantUID: merchant)) == "200")
            try await s.waitForCoins(user, 70)

            // Bad input: E11 without asking PortOne.
            let lookups = fake.lookups
            #expect(outcome(try await s.send(.post, "/v1/store/pay/validation", user, json: #"{"merchant_uid":"\#(merchant)"}"#)) == "400 E11")
            #expect(outcome(try await s.send(.post, "/v1/store/pay/validation", user, json: #"{"imp_uid":"imp_1"}"#)) == "400 E11")
            #expect(outcome(try await s.send(.post, "/v1/store/pay/validation", user, json: #"{"imp_uid":"","merchant_uid":"m"}"#)) == "400 E11")
            #expect(outcome(try await s.send(.post, "/v1/store/pay/validation", user, json: #"{"imp_uid":42,"merchant_uid":"m"}"#)) == "400 E11")
            #expect(outcome(try await s.send(.post, "/v1/store/pay/validation", user, json: "{not json")) == "400 E11")
            #expect(outcome(try await s.validate(user, impUID: "../users/getToken", merchantUID: merchant)) == "400 E11")
            #expect(outcome(try await s.validateForm(user, "imp_uid=imp%2F1&merchant_uid=m")) == "400 E11")
            #expect(fake.lookups == lookups)
            #expect(outcome(try await s.send(.post, "/v1/store/pay/validation", nil, json: #"{"imp_uid":"imp_1","merchant_uid":"m"}"#)) == "401 E02")

            // PortOne failing: 500, or slower than payment.portone-timeout-ms: E99 (503), no credit;
            // once PortOne answers again the payment validates normally.
            fake.set("imp_broken", .serverError)
            #expect(outcome(try await s.validate(user, impUID: "imp_broken", merchantUID: merchant)) == "503 E99")
            fake.set("imp_slow", .slow(.seconds(5), then: .init(merchantUID: merchant, name: "10 Coin", amount: 100)))
            let started = ContinuousClock.now
            #expect(outcome(try await s.validate(user, impUID: "imp_slow", merchantUID: merchant)) == "503 E99")
            #expect(ContinuousClock.now - started < .seconds(5))
            fake.paid("imp_broken", merchantUID: merchant)
            #expect(outcome(try await s.validate(user, impUID: "imp_broken", merchantUID: merchant)) == "200")

            // The access token was fetched once and reused for every lookup.
            #expect(fake.tokenRequests == 1)

            // The ledger: four credits (10 + 50 + 10 + 10), nothing else, equal to the balance.
            try await s.waitForCoins(user, 80)
            let db = try #require(s.paymentDatabase)
            let totals = try await LedgerTotals.read(db, user: user.id)
            #expect(totals == LedgerTotals(balance: 80, credits: 80, debits: 0, refunds: 0, entries: 4))
            let billed = try await db.query("SELECT count(*) FROM billings").decode(Int64.self).reduce(0) { $0 + $1 }
            #expect(billed == 4)
            #expect(try await s.sesacCoin(other) == 0)
        }
    }

    @Test("50 concurrent validations of one imp_uid: one credit, 49 × E81")
    func concurrentValidations() async throws {
        try await Stack.store { s, fake in
            let user = try await s.user()
            let merchant = "ios_\(Stack.appKey)_race"
            fake.paid("imp_race", merchantUID: merchant, name: "50 Coin", amount: 500)
            let racing = s.onOwnConnections()  // really at once, not queued on one connection
            let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<50 {
                    group.addTask { outcome(try await racing.validate(user, impUID: "imp_race", merchantUID: merchant)) }
                }
                return try await group.reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
            }
            #expect(outcomes == ["200": 1, "400 E81": 49])
            try await s.waitForCoins(user, 50)
            let totals = try await LedgerTotals.read(try #require(s.paymentDatabase), user: user.id)
            #expect(totals == LedgerTotals(balance: 50, credits: 50, debits: 0, refunds: 0, entries: 1))
        }
    }

    @Test("the database refuses a negative balance and changes to ledger entries")
    func ledgerInvariants() async throws {
        try await Stack.store { s, fake in
            let user = try await s.user()
            try await s.buy(user, fake, item: "10 Coin", price: 100)
            let db = try #require(s.paymentDatabase)
            let id = UUID(uuidString: user.id)
            await #expect(throws: (any Error).self) {
                try await db.query("UPDATE coin_balances SET balance = balance - 11 WHERE user_id = \(id)")
            }
            await #expect(throws: (any Error).self) { try await db.query("UPDATE coin_ledger SET delta = 1000 WHERE user_id = \(id)") }
            await #expect(throws: (any Error).self) { try await db.query("DELETE FROM coin_ledger WHERE user_id = \(id)") }
            let totals = try await LedgerTotals.read(db, user: user.id)
            #expect(totals == LedgerTotals(balance: 10, credits: 10, debits: 0, refunds: 0, entries: 1))
        }
    }
}
