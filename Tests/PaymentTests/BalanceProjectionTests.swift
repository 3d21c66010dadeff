import Events
import Foundation
import Kafka
import SuiteTesting
import Testing
import TestSupport

/// auth's projection of `payment.v1` behind `/users/me`'s `sesacCoin`: the newest balance wins by
/// version, whatever order or how often the events arrive.
@Suite("Coin balance projection")
struct BalanceProjectionTests {
    @Test("an older or repeated payment.v1 event never overwrites a newer balance")
    func versionGuard() async throws {
        try await Stack.run { s in
            let user = try await s.user()
            let marker = try await s.user()
            let producer = try TestKafka.producer(s.cluster)
            @discardableResult
            func publish<P: EventPayload>(_ payload: P, partition: Int32? = nil) async throws -> Int32 {
                let bytes = try EventCoding.encode(CloudEvent(source: "payment", data: payload))
                return try await producer.sendAndAwait(
                    KafkaProducerMessage(
                        topic: Topic.payment.name, key: payload.subject, value: bytes, partition: partition
                    )
                ).partition
            }
            guard let userId = UserID(user.id), let markerId = UserID(marker.id) else {
                Issue.record("user ids")
                return
            }
            try await publish(PaymentEvents.CoinsCredited(billingId: UUID(), userId: userId, amount: 100, balance: 100, version: 1))
            try await publish(
                PaymentEvents.CoinsDebited(
                    requestId: .generate(), workspaceId: .generate(), userId: userId, amount: 10, balance: 90, version: 3))
            try await s.waitForCoins(user, 90)
            // Stale: version 2 arrives after version 3, a rejection repeats version 3 with another balance.
            try await publish(PaymentEvents.CoinsRefunded(requestId: .generate(), userId: userId, amount: 20, balance: 120, version: 2))
            let partition = try await publish(
                PaymentEvents.CoinDebitRejected(
                    requestId: .generate(), userId: userId, amount: 500, reason: .insufficientCoins, balance: 7, version: 3))
            // Another user's event behind them on the same partition: once it shows, they were applied.
            try await publish(PaymentEvents.CoinsCredited(billingId: UUID(), userId: markerId, amount: 10, balance: 10, version: 1), partition: partition)
            try await s.waitForCoins(marker, 10)
            #expect(try await s.sesacCoin(user) == 90)
            try await publish(PaymentEvents.CoinsCredited(billingId: UUID(), userId: userId, amount: 50, balance: 140, version: 4))
            try await s.waitForCoins(user, 140)
        }
    }
}
