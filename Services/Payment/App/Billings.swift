import Database
import Events
import Foundation
import Logging
import PostgresNIO

/// A store item: what the client shows and charges, and what it buys.
struct StoreItem: Sendable, Equatable {
    var item: String
    /// KRW.
    var price: Int
    var coins: Int
}

/// A validated PortOne payment, recorded once per `imp_uid`.
struct BillingRecord: Sendable {
    var id: UUID
    var impUID: String
    var merchantUID: String
    var buyer: UserID
    var item: StoreItem
    var paidAt: Date
}

/// The catalogue (`store_items`, seeded by the migration) and the billings.
struct StoreRecords: Sendable {
    let logger: Logger

    func items(_ c: PostgresConnection) async throws -> [StoreItem] {
        var items: [StoreItem] = []
        for try await (item, price, coins) in try await c.query(
            "SELECT item, price, coins FROM store_items ORDER BY position", logger: logger
        ).decode((String, Int32, Int32).self) {
            items.append(StoreItem(item: item, price: Int(price), coins: Int(coins)))
        }
        return items
    }

    func isBilled(_ impUID: String, _ c: PostgresConnection) async throws -> Bool {
        for try await _ in try await c.query("SELECT 1 FROM billings WHERE imp_uid = \(impUID)", logger: logger) { return true }
        return false
    }

    /// Records the billing; false when `imp_uid` is already billed (the unique index decides
    /// concurrent validations of one payment: later ones wait for the first and find it taken).
    func insert(_ billing: BillingRecord, _ c: PostgresConnection) async throws -> Bool {
        let rows = try await c.query(
            """
            INSERT INTO billings (id, imp_uid, merchant_uid, buyer_id, item, price, coins, paid_at)
            VALUES (\(billing.id), \(billing.impUID), \(billing.merchantUID), \(billing.buyer.uuid), \(billing.item.item),
                    \(Int32(billing.item.price)), \(Int32(billing.item.coins)), \(billing.paidAt))
            ON CONFLICT (imp_uid) DO NOTHING RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }
}

/// A broken invariant of the payment store (a bug, logged as a 500, never a client error).
struct PaymentStoreError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
