import Logging
import PostgresNIO

/// Pooled work that gives up when its connection closes.
///
/// postgres-nio writes a query to its connection's channel without a write promise: a query
/// written just after the server closed the connection (PostgreSQL restarted, an administrator
/// terminated the backend) is dropped by the closed channel and its answer never comes. The pool
/// can also lease a connection whose close it has not yet heard of. So every pooled lease here
/// runs its work through `abandoningOnClose`: the caller gets `PostgresConnectionClosed` (a 503
/// for a request, a retry for a consumer) instead of waiting for ever
/// (`TerminatedBackendsStressTests`).
extension PostgresClient {
    /// `withConnection`, abandoned with `PostgresConnectionClosed` if the connection closes.
    public func withLiveConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await withConnection { connection in
            try await connection.abandoningOnClose { try await body(connection) }
        }
    }

    /// `withTransaction`, abandoned with `PostgresConnectionClosed` if the connection closes (the
    /// server rolls back the transaction of a closed session).
    public func withLiveTransaction<T: Sendable>(
        logger: Logger, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await withConnection { connection in
            try await connection.abandoningOnClose {
                try await connection.withTransaction(logger: logger) { try await body($0) }
            }
        }
    }

    /// `query`, abandoned with `PostgresConnectionClosed` if the connection closes. The rows are
    /// read before the connection goes back to the pool.
    @discardableResult
    public func liveQuery(_ query: PostgresQuery, logger: Logger) async throws -> LiveRows {
        try await withLiveConnection { connection in
            LiveRows(rows: try await connection.query(query, logger: logger).collect())
        }
    }
}

/// The rows of a `liveQuery`, read in full; iterates and decodes like a `PostgresRowSequence`.
public struct LiveRows: AsyncSequence, Sendable {
    public typealias Element = PostgresRow
    public let rows: [PostgresRow]

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: IndexingIterator<[PostgresRow]>
        public mutating func next() async throws -> PostgresRow? { base.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: rows.makeIterator()) }
}
