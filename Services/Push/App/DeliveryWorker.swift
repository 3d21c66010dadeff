import Database
import Events
import Foundation
import Logging
import Metrics
import PostgresNIO
import ServiceKit
import ServiceLifecycle

/// Sends the planned notifications. Each round leases the due rows (`FOR UPDATE SKIP LOCKED`,
/// so any number of replicas share the work and none sends a row another holds), sends them
/// concurrently, and records each outcome: sent; the token dropped (and removed) when the
/// provider says it is dead; another attempt after the provider's `Retry-After` or an
/// exponential back-off on 429/5xx/network errors; dead-lettered (`failed`) after
/// `push.max-attempts` or on a permanent refusal. A replica that dies mid-send leaves its rows
/// leased for `push.lease-seconds`; they are sent again after it (the one window where a device can
/// get a notification twice; the per-message collapse id makes the second replace the first).
/// Woken by `NOTIFY` when the planner commits; polls every second otherwise (retries come due).
final class DeliveryWorker: Service, Sendable {
    private let postgres: PostgresClient
    private let senders: [PushProvider: any PushSender]
    private let maxAttempts: Int
    private let batchSize: Int
    private let leaseSeconds: Int
    private let logger: Logger
    private let latency = Timer(label: "push_commit_to_provider_seconds", preferredDisplayUnit: .seconds)
    private let retried = Counter(label: "push_notifications_retried_total")

    init(postgres: PostgresClient, senders: [PushProvider: any PushSender], settings: PushSettings, logger: Logger) {
        self.postgres = postgres
        self.senders = senders
        maxAttempts = settings.maxAttempts
        batchSize = settings.concurrency
        leaseSeconds = settings.leaseSeconds
        self.logger = logger
    }

    struct Due: Sendable {
        var messageId: UUID
        var token: String
        var provider: PushProvider
        var content: NotificationContent
        var attempts: Int
        var messageAt: Date
    }

    func run() async throws {
        let (wakes, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.listen(continuation) }
                group.addTask {
                    var wake = wakes.makeAsyncIterator()
                    while !Task.isCancelled {
                        let sent: Int
                        do {
                            sent = try await self.round()
                        } catch {
                            if Task.isCancelled { return }
                            self.logger.warning("push round failed; retrying", metadata: [LogKey.error: "\(describe(error))"])
                            sent = 0
                        }
                        if sent == 0 {
                            // A notification or the one-second poll, whichever comes first.
                            let timer = Task {
                                try? await Task.sleep(for: .seconds(1))
                                continuation.yield()
                            }
                            _ = await wake.next()
                            timer.cancel()
                        }
                    }
                }
                await group.next()
                group.cancelAll()
            }
        }
    }

    /// LISTENs for the planner's wake-ups, reconnecting after a lost connection.
    private func listen(_ continuation: AsyncStream<Void>.Continuation) async {
        while !Task.isCancelled {
            do {
                try await postgres.withLiveConnection { connection in
                    try await connection.listen(on: NotificationPlanner.wakeChannel) { notifications in
                        for try await _ in notifications { continuation.yield() }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Leases, sends and records one batch; answers how many were due.
    func round() async throws -> Int {
        let due = try await lease()
        guard !due.isEmpty else { return 0 }
        let outcomes = await withTaskGroup(of: (Due, SendOutcome).self) { group in
            for notification in due {
                group.addTask {
                    guard let sender = self.senders[notification.provider] else {
                        return (notification, .failed("provider \(notification.provider.rawValue) is not configured"))
                    }
                    return (
                        notification, await sender.send(token: notification.token, content: notification.content, collapseId: notification.messageId.lowercased)
                    )
                }
            }
            return await group.reduce(into: [(Due, SendOutcome)]()) { $0.append($1) }
        }
        // The common case, sent, in one statement; the others one by one.
        let sent = outcomes.filter { $0.1 == .sent }.map(\.0)
        await recordSent(sent)
        for (notification, outcome) in outcomes where outcome != .sent { await record(notification, outcome) }
        return due.count
    }

    private func recordSent(_ sent: [Due]) async {
        guard !sent.isEmpty else { return }
        let now = Date()
        for n in sent {
            latency.recordSeconds(now.timeIntervalSince(n.messageAt))
            Counter(label: "push_notifications_sent_total", dimensions: [("provider", n.provider.rawValue)]).increment()
        }
        do {
            _ = try await postgres.liveQuery(
                """
                UPDATE notifications n SET status = 'sent', sent_at = clock_timestamp(), last_error = NULL
                FROM unnest(\(sent.map(\.messageId))::uuid[], \(sent.map(\.token))::text[]) AS s(m, t)
                WHERE n.message_id = s.m AND n.token = s.t
                """, logger: logger)
        } catch {
            // The lease runs out and they are attempted again (the window for a second delivery).
            logger.warning("push outcomes not recorded", metadata: [LogKey.error: "\(describe(error))", LogKey.count: "\(sent.count)"])
        }
    }

    private func lease() async throws -> [Due] {
        let rows = try await postgres.liveQuery(
            """
            UPDATE notifications n SET attempts = n.attempts + 1,
                next_attempt_at = clock_timestamp() + make_interval(secs => \(leaseSeconds))
            FROM (SELECT message_id, token FROM notifications WHERE status = 'pending' AND next_attempt_at <= clock_timestamp()
                  ORDER BY next_attempt_at LIMIT \(batchSize) FOR UPDATE SKIP LOCKED) due
            WHERE n.message_id = due.message_id AND n.token = due.token
            RETURNING n.message_id, n.token, n.provider, n.payload::text, n.attempts, n.message_at
            """, logger: logger)
        var due: [Due] = []
        let decoder = JSONDecoder()
        for try await (message, token, provider, payload, attempts, at) in rows.decode((UUID, String, String, String, Int, Date).self) {
            guard let provider = PushProvider(rawValue: provider), let content = try? decoder.decode(NotificationContent.self, from: Data(payload.utf8))
            else { continue }
            due.append(Due(messageId: message, token: token, provider: provider, content: content, attempts: attempts, messageAt: at))
        }
        return due
    }

    private func record(_ n: Due, _ outcome: SendOutcome) async {
        let provider = n.provider.rawValue
        do {
            switch outcome {
            case .sent:
                await recordSent([n])
            case .unregistered:
                Counter(label: "push_notifications_failed_total", dimensions: [("provider", provider), ("reason", "unregistered")]).increment()
                try await postgres.withLiveTransaction(logger: logger) { [logger] c in
                    _ = try await c.query(
                        """
                        UPDATE notifications SET status = 'dropped', last_error = 'unregistered' WHERE token = \(n.token) AND status = 'pending'
                        """, logger: logger)
                    _ = try await c.query(
                        """
                        UPDATE notifications SET status = 'dropped', last_error = 'unregistered' WHERE message_id = \(n.messageId) AND token = \(n.token)
                        """, logger: logger)
                    _ = try await c.query("DELETE FROM device_tokens WHERE token = \(n.token)", logger: logger)
                }
                logger.info("device token unregistered; dropped", metadata: ["push.provider": "\(provider)"])
            case .retry(let after, let reason) where n.attempts < maxAttempts:
                retried.increment()
                // 1 s, 2 s, 4 s … up to 5 minutes, or later when the provider asked for it.
                let backoff = Double(min(300, 1 << min(n.attempts - 1, 9)))
                let delay = max(backoff, after.map { Double($0.components.seconds) } ?? 0)
                logger.info(
                    "push notification to be retried",
                    metadata: ["push.provider": "\(provider)", "push.attempts": "\(n.attempts)", "push.retry-in": "\(delay)s", LogKey.error: "\(reason)"])
                _ = try await postgres.liveQuery(
                    """
                    UPDATE notifications SET next_attempt_at = clock_timestamp() + make_interval(secs => \(delay)), last_error = \(reason)
                    WHERE message_id = \(n.messageId) AND token = \(n.token)
                    """, logger: logger)
            case .retry(_, let reason), .failed(let reason):
                Counter(label: "push_notifications_failed_total", dimensions: [("provider", provider), ("reason", "dead_letter")]).increment()
                logger.warning(
                    "push notification dead-lettered", metadata: ["push.provider": "\(provider)", "push.attempts": "\(n.attempts)", LogKey.error: "\(reason)"])
                _ = try await postgres.liveQuery(
                    """
                    UPDATE notifications SET status = 'failed', last_error = \(reason) WHERE message_id = \(n.messageId) AND token = \(n.token)
                    """, logger: logger)
            }
        } catch {
            // The lease runs out and the notification is attempted again.
            logger.warning("push outcome not recorded", metadata: [LogKey.error: "\(describe(error))"])
        }
    }
}
