import Common
import Database
import Events
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import ServiceKit
import Synchronization

/// The workspace side of the coin saga. Creating a workspace that costs coins inserts it as
/// `pending` together with a `workspace.coin-debit-requested` event; `payment` answers on
/// `payment.v1`, and `SagaReplies` activates or discards the workspace in its inbox transaction
/// and sends `NOTIFY workspace_creation, '<workspace id>'`, which PostgreSQL delivers at commit —
/// to whichever replica holds the waiting HTTP request. This service is that replica's listener;
/// a 1 s re-check covers a notification lost while the listener reconnects.
final class CreationSaga: Service, Sendable {
    static let channel = "workspace_creation"
    private let postgres: PostgresClient
    private let store: WorkspaceStore
    private let logger: Logger
    private let waiters = Mutex<[WorkspaceID: [UUID: AsyncStream<Void>.Continuation]]>([:])

    init(postgres: PostgresClient, store: WorkspaceStore, logger: Logger) {
        self.postgres = postgres
        self.store = store
        self.logger = logger
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await self.postgres.withLiveConnection { connection in
                        try await connection.listen(on: Self.channel) { notifications in
                            for try await notification in notifications {
                                if let id = WorkspaceID(notification.payload) { self.signal(id) }
                            }
                        }
                    }
                } catch {
                    if Task.isCancelled { return }
                    self.logger.warning("creation saga listener lost its connection; reconnecting", metadata: ["error": "\(describe(error))"])
                    try? await Task.sleep(for: .seconds(1))
                }
            }
        }
    }

    /// Waits until the pending workspace is activated or discarded, or `timeout` passes.
    func outcome(of id: WorkspaceID, timeout: Duration) async throws -> WorkspaceStore.CreationState {
        let deadline = ContinuousClock.now + timeout
        while true {
            // Register before looking, so a notification between the look and the wait is kept.
            let (wakes, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            let key = UUID()
            waiters.withLock { $0[id, default: [:]][key] = continuation }
            defer {
                _ = waiters.withLock { $0[id]?.removeValue(forKey: key) }
                continuation.finish()
            }
            let state = try await postgres.withLiveConnection { try await self.store.creationState(id, $0) }
            let remaining = deadline - ContinuousClock.now
            if state != .pending || remaining <= .zero { return state }
            // A per-iteration stream: cancelling its iteration at the timeout only ends this one.
            _ = try? await withTimeout(min(remaining, .seconds(1)), "creation saga wait") {
                for await _ in wakes { return }
            }
        }
    }

    private func signal(_ id: WorkspaceID) {
        let continuations = waiters.withLock { $0[id].map { Array($0.values) } ?? [] }
        continuations.forEach { $0.yield() }
    }

    /// Queued with the caller's transaction; delivered to listeners when it commits.
    static func notify(_ id: WorkspaceID, _ c: PostgresConnection, logger: Logger) async throws {
        _ = try await c.query("SELECT pg_notify(\(channel), \(id.description))", logger: logger)
    }
}
