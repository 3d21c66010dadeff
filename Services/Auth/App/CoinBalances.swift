import Database
import Events
import Logging
import PostgresNIO

/// `payment.v1` → the `coin_balances` projection behind `/users/me`'s `sesacCoin`. Every payment
/// event carries the balance after it and the balance's per-user version; events of one user
/// arrive in order (keyed by user id), and the version guard keeps a replayed or reordered older
/// event from overwriting a newer balance.
enum CoinBalances {
    static var projection: EventRouter {
        var router = EventRouter()
        router.on(PaymentEvents.CoinsCredited.self) { event, context in
            try await apply(event.data.userId, balance: event.data.balance, version: event.data.version, context)
        }
        router.on(PaymentEvents.CoinsDebited.self) { event, context in
            try await apply(event.data.userId, balance: event.data.balance, version: event.data.version, context)
        }
        router.on(PaymentEvents.CoinDebitRejected.self) { event, context in
            try await apply(event.data.userId, balance: event.data.balance, version: event.data.version, context)
        }
        router.on(PaymentEvents.CoinsRefunded.self) { event, context in
            try await apply(event.data.userId, balance: event.data.balance, version: event.data.version, context)
        }
        return router
    }

    private static func apply(_ user: UserID, balance: Int, version: Int64, _ context: EventContext) async throws {
        _ = try await context.connection.query(
            """
            INSERT INTO coin_balances AS b (user_id, balance, version) VALUES (\(user.uuid), \(balance), \(version))
            ON CONFLICT (user_id) DO UPDATE SET balance = EXCLUDED.balance, version = EXCLUDED.version
            WHERE b.version < EXCLUDED.version
            """, logger: context.logger)
    }
}
