import Database
import Events
import Foundation
import Logging
import Metrics
import PostgresNIO
import ServiceKit
import ServiceLifecycle
import Synchronization

/// Publishes status changes: every `tick`, the users online in the session table are compared
/// with the status last published, and each difference is written — the `presence_status` row
/// and the `presence.status-changed` event in the outbox, one transaction — so `presence.v1`
/// carries a user's status only when it changes.
///
/// One replica publishes: the one holding a session advisory lock on the presence database (the
/// others stand by with warm tables and take over when its connection drops). Each replica's
/// view is its own reading of the topic; a single writer keeps two views that differ for a
/// moment from publishing a flap. A leader starts only once its table caught up, so a restarted
/// replica never declares everyone offline before it read the sessions.
final class StatusPublisher: Service, Sendable {
    static let leaderLockId: Int64 = 0x7072_6573_656e_6365  // "presence"
    static let source = "presence"
    /// Changes written per transaction.
    static let batchSize = 500

    struct Configuration: Sendable {
        var tick: Duration = .seconds(1)
        var standbyRetry: Duration = .seconds(1)
        /// Dead sessions and silent gateways are forgotten after this long.
        var pruneHorizon: TimeInterval = 3_600
    }

    private let postgres: PostgresClient
    private let reader: SessionReader
    private let configuration: Configuration
    private let logger: Logger
    private let leading = Atomic<Bool>(false)
    private let online = Gauge(label: "presence_online_users")
    private let wentOnline = Counter(label: "presence_status_changes_total", dimensions: [("status", "online")])
    private let wentOffline = Counter(label: "presence_status_changes_total", dimensions: [("status", "offline")])

    init(postgres: PostgresClient, reader: SessionReader, configuration: Configuration, logger: Logger) {
        self.postgres = postgres
        self.reader = reader
        self.configuration = configuration
        self.logger = logger
    }

    var isLeader: Bool { leading.load(ordering: .relaxed) }

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                if self.reader.isCaughtUp {
                    do {
                        try await self.leadOrStandBy()
                    } catch is CancellationError {
                        return
                    } catch {
                        if Task.isCancelled { return }
                        self.logger.error("presence publisher failed; retrying", metadata: [LogKey.error: "\(describe(error))"])
                    }
                }
                try await Task.sleep(for: self.configuration.standbyRetry)
            }
        }
    }

    private func leadOrStandBy() async throws {
        try await postgres.withLiveConnection { connection in
            let logger = self.logger
            guard try await connection.tryAdvisoryLock(Self.leaderLockId, logger: logger) else { return }  // another replica leads; stand by
            self.leading.store(true, ordering: .relaxed)
            defer { self.leading.store(false, ordering: .relaxed) }
            logger.info("presence publisher is the leader")
            do {
                var published = try await connection.abandoningOnClose { try await Self.onlineUsers(connection, logger: logger) }
                while !Task.isCancelled {
                    let before = published
                    published = try await connection.abandoningOnClose { try await self.reconcile(connection, published: before) }
                    try await Task.sleep(for: self.configuration.tick)
                }
            } catch {
                await connection.releaseAdvisoryLock(Self.leaderLockId, logger: logger)
                throw error
            }
            await connection.releaseAdvisoryLock(Self.leaderLockId, logger: logger)
        }
    }

    /// Writes what changed since `published` (the users published online); returns the users
    /// published online afterwards.
    func reconcile(_ connection: PostgresConnection, published: Set<UserID>) async throws -> Set<UserID> {
        let now = Date()
        let horizon = configuration.pruneHorizon
        let (current, offline) = reader.read { table -> (Set<UserID>, [(UserID, Date)]) in
            table.prune(now: now, horizon: horizon)
            let current = table.onlineUsers(now: now)
            return (current, published.subtracting(current).map { ($0, table.lastSeen($0, now: now) ?? now) })
        }
        online.record(current.count)
        let changes =
            current.subtracting(published).map { ($0, PresenceEvents.Status.online, now) } + offline.map { ($0.0, PresenceEvents.Status.offline, $0.1) }
        guard !changes.isEmpty else { return published }
        var result = published
        for start in stride(from: 0, to: changes.count, by: Self.batchSize) {
            let batch = Array(changes[start..<min(start + Self.batchSize, changes.count)])
            try await connection.withTransaction(logger: logger) { c in
                let workspaces = try await Self.workspaces(of: batch.map(\.0), c, logger: self.logger)
                for (user, status, lastSeen) in batch {
                    try await Self.write(user, status, lastSeen: lastSeen, workspaces: workspaces[user] ?? [], c, logger: self.logger)
                }
            }
            for (user, status, _) in batch {
                if status == .online {
                    result.insert(user)
                    wentOnline.increment()
                } else {
                    result.remove(user)
                    wentOffline.increment()
                }
            }
        }
        return result
    }

    // MARK: SQL

    static func onlineUsers(_ connection: PostgresConnection, logger: Logger) async throws -> Set<UserID> {
        var users = Set<UserID>()
        for try await id in try await connection.query("SELECT user_id FROM presence_status WHERE status = 'online'", logger: logger).decode(UUID.self) {
            users.insert(UserID(id))
        }
        return users
    }

    static func workspaces(of users: [UserID], _ c: PostgresConnection, logger: Logger) async throws -> [UserID: [WorkspaceID]] {
        var result: [UserID: [WorkspaceID]] = [:]
        let rows = try await c.query(
            "SELECT user_id, workspace_id FROM workspace_members WHERE user_id = ANY(\(users.map(\.uuid))::uuid[]) ORDER BY workspace_id",
            logger: logger)
        for try await (user, workspace) in rows.decode((UUID, UUID).self) {
            result[UserID(user), default: []].append(WorkspaceID(workspace))
        }
        return result
    }

    static func write(
        _ user: UserID, _ status: PresenceEvents.Status, lastSeen: Date, workspaces: [WorkspaceID], _ c: PostgresConnection, logger: Logger
    ) async throws {
        let event = PresenceEvents.StatusChanged(userId: user, status: status, lastSeen: lastSeen, workspaceIds: workspaces)
        _ = try await c.query(
            """
            INSERT INTO presence_status (user_id, status, last_seen) VALUES (\(user.uuid), \(status.rawValue), \(event.lastSeen))
            ON CONFLICT (user_id) DO UPDATE SET status = EXCLUDED.status, last_seen = EXCLUDED.last_seen, changed_at = clock_timestamp()
            """, logger: logger)
        try await Outbox.append(CloudEvent(source: source, data: event), on: c, logger: logger)
    }
}
