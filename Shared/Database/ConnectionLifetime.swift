import Common
import Logging
import PostgresNIO
import Synchronization

/// The connection closed while work on it was still waiting.
public struct PostgresConnectionClosed: Error, CustomStringConvertible {
    public var description: String { "the database connection closed" }
}

extension PostgresConnection {
    /// Runs `body` on this connection, but gives up with `PostgresConnectionClosed` as soon as
    /// the connection closes. A query postgres-nio writes just as its connection is closed by the
    /// server (PostgreSQL restarted, the backend terminated) can wait forever, and a task group
    /// waits for its slowest child: without this, a relay or listener holding the connection
    /// would never notice and never reconnect (tested: `OutboxRecoveryTests`). The abandoned
    /// `body` is cancelled and left to end on its own.
    public func abandoningOnClose<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await abandoning(body) { abandon in
            closeFuture.whenComplete { _ in abandon(PostgresConnectionClosed()) }
            return {}
        }
    }

    /// Tries to take a session advisory lock on this connection (held until released or the
    /// connection closes): how one replica of many becomes the leader.
    public func tryAdvisoryLock(_ id: Int64, logger: Logger) async throws -> Bool {
        try await abandoningOnClose {
            var acquired = false
            for try await value in try await self.query("SELECT pg_try_advisory_lock(\(id))", logger: logger).decode(Bool.self) {
                acquired = value
            }
            return acquired
        }
    }

    /// Releases a session advisory lock, unless the connection is gone (which released it).
    public func releaseAdvisoryLock(_ id: Int64, logger: Logger) async {
        guard !isClosed else { return }
        _ = try? await abandoningOnClose { try await self.query("SELECT pg_advisory_unlock(\(id))", logger: logger) }
    }
}
