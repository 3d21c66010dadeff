import Foundation
import Logging
import PostgresNIO

/// SQL of the shop.
struct StudyShopStore: Sendable {
    let logger: Logger

    /// 200 worn; 201 not owned; 406 not registered.
    func wear(_ uid: String, sesac: Int, background: Int, _ c: PostgresConnection) async throws -> Int {
        for try await owned in try await c.query(
            """
            UPDATE users SET sesac = CASE WHEN \(Int32(sesac)) = ANY(sesac_collection) AND \(Int32(background)) = ANY(background_collection)
                                        THEN \(Int32(sesac)) ELSE sesac END,
                             background = CASE WHEN \(Int32(sesac)) = ANY(sesac_collection) AND \(Int32(background)) = ANY(background_collection)
                                        THEN \(Int32(background)) ELSE background END
            WHERE uid = \(uid)
            RETURNING \(Int32(sesac)) = ANY(sesac_collection) AND \(Int32(background)) = ANY(background_collection)
            """, logger: logger
        ).decode(Bool.self) {
            return owned ? 200 : 201
        }
        return 406
    }

    /// Records the transaction (once, for one user) and adds its item to the user's collection:
    /// 200; 201 the transaction was used before; 406 the user withdrew meanwhile.
    func grant(_ uid: String, _ transaction: AppStoreTransaction, _ item: StudyShopItem, _ c: PostgresConnection) async throws -> Int {
        var registered = false
        for try await _ in try await c.query("SELECT 1 FROM users WHERE uid = \(uid) FOR UPDATE", logger: logger) { registered = true }
        guard registered else { return 406 }
        var fresh = false
        for try await _ in try await c.query(
            """
            INSERT INTO purchases (transaction_id, uid, product_id) VALUES (\(transaction.transactionId), \(uid), \(transaction.productId))
            ON CONFLICT (transaction_id) DO NOTHING RETURNING 1
            """, logger: logger)
        {
            fresh = true
        }
        guard fresh else { return 201 }
        let (sesac, background): (Int32?, Int32?) =
            switch item {
            case .sesac(let n): (Int32(n), nil)
            case .background(let n): (nil, Int32(n))
            }
        try await c.query(
            """
            UPDATE users SET transaction_id = array_append(transaction_id, \(transaction.transactionId)),
                sesac_collection = CASE WHEN \(sesac)::integer IS NULL OR \(sesac)::integer = ANY(sesac_collection) THEN sesac_collection
                                        ELSE array_append(sesac_collection, \(sesac)::integer) END,
                background_collection = CASE WHEN \(background)::integer IS NULL OR \(background)::integer = ANY(background_collection)
                                        THEN background_collection ELSE array_append(background_collection, \(background)::integer) END
            WHERE uid = \(uid)
            """, logger: logger)
        return 200
    }
}
