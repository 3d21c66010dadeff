import Database
import Events
import Foundation
import Logging
import PostgresNIO

/// A user's balance after a ledger entry, with the balance's version (bumped per entry).
struct CoinBalance: Sendable, Equatable {
    var balance: Int
    var version: Int64
    static let empty = CoinBalance(balance: 0, version: 0)
}

/// The coin ledger: every change of a balance is one append-only entry written by the same
/// statement that changes the balance row, so the two cannot disagree. The balance row's CHECK
/// makes an overdraft impossible even under concurrent debits (each debit locks the row and
/// re-reads it; a debit that would go negative matches no row).
struct CoinLedger: Sendable {
    enum Kind: String, Sendable { case credit, debit, refund }
    let logger: Logger

    /// Adds `amount` coins (a store credit for `billing`, or the refund of `request`).
    func add(
        _ kind: Kind, user: UserID, amount: Int, billing: UUID? = nil, request: CoinRequestID? = nil,
        _ c: PostgresConnection
    ) async throws -> CoinBalance {
        try await entry(
            c.query(
                """
                WITH b AS (
                    INSERT INTO coin_balances AS b (user_id, balance, version) VALUES (\(user.uuid), \(amount), 1)
                    ON CONFLICT (user_id) DO UPDATE SET balance = b.balance + EXCLUDED.balance, version = b.version + 1
                    RETURNING balance, version
                )
                INSERT INTO coin_ledger (user_id, version, kind, delta, balance_after, billing_id, request_id)
                SELECT \(user.uuid), b.version, \(kind.rawValue), \(amount), b.balance, \(billing), \(request?.uuid) FROM b
                RETURNING balance_after, version
                """, logger: logger), "credit")
    }

    /// Takes `amount` coins for `request`; nil (nothing written) when the balance is too low.
    func debit(user: UserID, amount: Int, request: CoinRequestID, _ c: PostgresConnection) async throws -> CoinBalance? {
        let rows = try await c.query(
            """
            WITH b AS (
                UPDATE coin_balances SET balance = balance - \(amount), version = version + 1
                WHERE user_id = \(user.uuid) AND balance >= \(amount)
                RETURNING balance, version
            )
            INSERT INTO coin_ledger (user_id, version, kind, delta, balance_after, request_id)
            SELECT \(user.uuid), b.version, 'debit', \(-amount), b.balance, \(request.uuid) FROM b
            RETURNING balance_after, version
            """, logger: logger)
        for try await (balance, version) in rows.decode((Int64, Int64).self) {
            return CoinBalance(balance: Int(balance), version: version)
        }
        return nil
    }

    /// The user's balance (0, version 0 when the user never had coins).
    func balance(of user: UserID, _ c: PostgresConnection) async throws -> CoinBalance {
        for try await (balance, version) in try await c.query(
            "SELECT balance, version FROM coin_balances WHERE user_id = \(user.uuid)", logger: logger
        ).decode((Int64, Int64).self) {
            return CoinBalance(balance: Int(balance), version: version)
        }
        return .empty
    }

    /// The debit of `request` (user and coins taken) unless it was already refunded; nil when
    /// there is no such debit or it has been given back.
    func refundableDebit(_ request: CoinRequestID, _ c: PostgresConnection) async throws -> (user: UserID, amount: Int)? {
        let rows = try await c.query(
            """
            SELECT d.user_id, -d.delta FROM coin_ledger d
            WHERE d.request_id = \(request.uuid) AND d.kind = 'debit'
              AND NOT EXISTS (SELECT 1 FROM coin_ledger r WHERE r.request_id = d.request_id AND r.kind = 'refund')
            """, logger: logger)
        for try await (user, amount) in rows.decode((UUID, Int64).self) {
            return (UserID(user), Int(amount))
        }
        return nil
    }

    private func entry(_ rows: PostgresRowSequence, _ what: String) async throws -> CoinBalance {
        for try await (balance, version) in rows.decode((Int64, Int64).self) {
            return CoinBalance(balance: Int(balance), version: version)
        }
        throw PaymentStoreError("coin ledger \(what) wrote no entry")
    }
}
