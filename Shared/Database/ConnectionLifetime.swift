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
    ///
    /// A connection's close is watched once, however often this runs on it (`CloseWatches`): a
    /// close-future callback per call would stay registered until the connection closes, and the
    /// relay runs this for every drain of a leader connection that lives for days.
    public func abandoningOnClose<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await abandoning(body) { abandon in
            CloseWatches.shared.watch(self, abandon)
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

/// One close-future callback per connection, shared by every `abandoningOnClose` on it: each
/// call adds its abandon handler here and removes it when its answer is in, so a long-lived
/// connection holds only the handlers of the work still running on it.
public final class CloseWatches: Sendable {
    public static let shared = CloseWatches()

    private struct Watch {
        weak var connection: PostgresConnection?
        var handlers: [Int: @Sendable (any Error) -> Void] = [:]
    }

    private let state = Mutex<(next: Int, watches: [ObjectIdentifier: Watch])>((0, [:]))

    /// Calls `abandon` when `connection` closes (at once if it has); returns what unregisters it.
    func watch(_ connection: PostgresConnection, _ abandon: @escaping @Sendable (any Error) -> Void) -> @Sendable () -> Void {
        let id = ObjectIdentifier(connection)
        let (token, isNew) = state.withLock { state -> (Int, Bool) in
            state.next += 1
            // A watch left by a connection that is gone (its address reused) starts over.
            let isNew = state.watches[id]?.connection !== connection
            if isNew { state.watches[id] = Watch(connection: connection) }
            state.watches[id]?.handlers[state.next] = abandon
            return (state.next, isNew)
        }
        if isNew {
            // Completes at once, on the loop, if the connection has already closed.
            connection.closeFuture.whenComplete { [self, weak connection] _ in
                let handlers = state.withLock { state -> [@Sendable (any Error) -> Void] in
                    guard let connection, let watch = state.watches[id], watch.connection === connection else { return [] }
                    state.watches[id] = nil
                    return Array(watch.handlers.values)
                }
                for handler in handlers { handler(PostgresConnectionClosed()) }
            }
        }
        return { [self] in
            state.withLock { state in _ = state.watches[id]?.handlers.removeValue(forKey: token) }
        }
    }

    /// Abandon handlers registered on `connection` whose work has not answered yet.
    public func pendingHandlers(on connection: PostgresConnection) -> Int {
        state.withLock { $0.watches[ObjectIdentifier(connection)]?.handlers.count ?? 0 }
    }
}
