import Logging
import Metrics
import PostgresNIO
import ServiceLifecycle

/// Forgets processed event ids once no copy of the event can arrive any more: inbox rows older
/// than `retention`, which must exceed the topics' retention (Kafka's default is 7 days; the
/// catalog sets none), so a redelivered event is always still found.
///
/// Runs a pass at start and then every `interval`; each pass deletes in batches of `batchSize`
/// rows, one short statement (and transaction) each, so it never holds locks for long. Replicas
/// may prune at the same time: rows another pass is deleting are skipped, not waited for.
public final class InboxPruner: Service, Sendable {
    public struct Configuration: Sendable {
        public var retention: Duration = .seconds(8 * 24 * 3600)
        public var interval: Duration = .seconds(3600)
        public var batchSize: Int = 1_000
        /// Pause between two batches of one pass (lets other writers in).
        public var batchPause: Duration = .milliseconds(10)
        public init() {}
    }

    private let postgres: PostgresClient
    private let logger: Logger
    private let configuration: Configuration
    private let pruned = Counter(label: "inbox_pruned_total")

    public init(postgres: PostgresClient, logger: Logger, configuration: Configuration = .init()) {
        self.postgres = postgres
        self.logger = logger
        self.configuration = configuration
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    _ = try await self.prune()
                } catch {
                    if Task.isCancelled { return }
                    self.logger.warning("inbox prune failed; retrying next interval", metadata: ["error": "\(String(reflecting: error))"])
                }
                do { try await Task.sleep(for: self.configuration.interval) } catch { return }
            }
        }
    }

    /// One pass: deletes every row older than the retention, batch by batch; returns how many.
    @discardableResult
    public func prune() async throws -> Int {
        let seconds = Double(configuration.retention.components.seconds)
        var total = 0
        while !Task.isCancelled {
            let rows = try await postgres.liveQuery(
                """
                WITH doomed AS (
                    SELECT consumer, event_id FROM inbox
                    WHERE processed_at < now() - make_interval(secs => \(seconds))
                    ORDER BY processed_at LIMIT \(configuration.batchSize)
                    FOR UPDATE SKIP LOCKED
                )
                DELETE FROM inbox i USING doomed d WHERE i.consumer = d.consumer AND i.event_id = d.event_id
                RETURNING 1
                """, logger: logger)
            var deleted = 0
            for try await _ in rows { deleted += 1 }
            total += deleted
            pruned.increment(by: deleted)
            if deleted < configuration.batchSize { break }
            try await Task.sleep(for: configuration.batchPause)
        }
        if total > 0 {
            logger.info("inbox pruned", metadata: ["inbox.pruned": "\(total)"])
        }
        return total
    }
}
