import Database
import Events
import Foundation
import Logging
import PostgresNIO

/// The coin saga's debit requests, each decided once: the primary key on `request_id` makes a
/// repeated request (a new event id for the same request) a no-op, however it arrives.
struct DebitRequests: Sendable {
    let logger: Logger

    /// Claims the request as debited (the caller debits in the same transaction, or marks it
    /// rejected); false when it was decided before.
    func claim(_ request: WorkspaceEvents.CoinDebitRequested, _ c: PostgresConnection) async throws -> Bool {
        let rows = try await c.query(
            """
            INSERT INTO debit_requests (request_id, workspace_id, user_id, amount, outcome)
            VALUES (\(request.requestId.uuid), \(request.workspaceId.uuid), \(request.userId.uuid), \(request.amount), 'debited')
            ON CONFLICT (request_id) DO NOTHING RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    func markRejected(_ request: CoinRequestID, _ c: PostgresConnection) async throws {
        _ = try await c.query("UPDATE debit_requests SET outcome = 'rejected' WHERE request_id = \(request.uuid)", logger: logger)
    }
}
