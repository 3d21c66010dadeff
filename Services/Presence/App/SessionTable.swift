import Events
import Foundation

/// Every client session at every gateway, and every gateway process's liveness, as
/// `gateway.session.v1` tells them (a value type: the reader applies records to it under a lock,
/// the status publisher asks it who is online). Pure, so the rules are tested without Kafka.
///
/// A session is live when a client is attached to it (opened, or resumed — a native session
/// whose connection ended is resumable but not live) **and** the gateway process holding it is
/// alive: it announced itself within `gatewayTimeout`, did not stop, and no newer process of the
/// same gateway id has announced itself since. A session of a process that never announced
/// itself (an older gateway, or an announcement not read yet) is given `gatewayTimeout` from its
/// own record.
struct SessionTable: Sendable {
    struct Session: Sendable, Equatable {
        var userId: UserID
        var gatewayId: String
        var instance: String?
        var attached: Bool
        /// When the record that put the session in this state was written.
        var since: Date
    }

    struct Instance: Sendable, Equatable {
        var startedAt: Date
        var lastAlive: Date
        var stopped: Bool
    }

    private(set) var sessions: [String: Session] = [:]
    /// User → the ids of their sessions in `sessions`.
    private var byUser: [UserID: Set<String>] = [:]
    /// Gateway id → its processes (instance id → liveness).
    private(set) var gateways: [String: [String: Instance]] = [:]
    /// When each user's most recent session ended (closed or detached), for `lastSeen`.
    private(set) var lastEnded: [UserID: Date] = [:]
    let gatewayTimeout: TimeInterval

    init(gatewayTimeout: TimeInterval) {
        self.gatewayTimeout = gatewayTimeout
    }

    // MARK: applying records

    mutating func opened(_ e: GatewayEvents.SessionOpened) {
        guard let user = e.userId else { return }  // anonymous Socket.IO sessions have no presence
        set(e.sessionId, Session(userId: user, gatewayId: e.gatewayId, instance: e.gatewayInstance, attached: true, since: e.openedAt))
    }

    mutating func checkpointed(_ e: GatewayEvents.SessionCheckpoint) {
        let attached = e.attached ?? false
        if !attached { ended(e.userId, at: e.checkpointedAt) }
        set(e.sessionId, Session(userId: e.userId, gatewayId: e.gatewayId, instance: e.gatewayInstance, attached: attached, since: e.checkpointedAt))
    }

    mutating func closed(_ e: GatewayEvents.SessionClosed) {
        // Only the gateway that last held the session ends it (a resume elsewhere took it over).
        if let current = sessions[e.sessionId], current.gatewayId != e.gatewayId { return }
        if let user = e.userId ?? sessions[e.sessionId]?.userId { ended(user, at: e.closedAt) }
        set(e.sessionId, nil)
    }

    /// A tombstone: the session's key was deleted (after its `SessionClosed`).
    mutating func removed(sessionId: String, at: Date) {
        if let session = sessions[sessionId], session.attached { ended(session.userId, at: at) }
        set(sessionId, nil)
    }

    mutating func alive(_ e: GatewayEvents.GatewayAlive) {
        var instance = gateways[e.gatewayId]?[e.instanceId] ?? Instance(startedAt: e.startedAt, lastAlive: e.at, stopped: false)
        instance.lastAlive = max(instance.lastAlive, e.at)
        gateways[e.gatewayId, default: [:]][e.instanceId] = instance
    }

    mutating func stopped(_ e: GatewayEvents.GatewayStopped) {
        var instance = gateways[e.gatewayId]?[e.instanceId] ?? Instance(startedAt: e.at, lastAlive: e.at, stopped: true)
        instance.stopped = true
        instance.lastAlive = max(instance.lastAlive, e.at)
        gateways[e.gatewayId, default: [:]][e.instanceId] = instance
    }

    private mutating func set(_ id: String, _ session: Session?) {
        if let previous = sessions[id] {
            byUser[previous.userId]?.remove(id)
            if byUser[previous.userId]?.isEmpty == true { byUser[previous.userId] = nil }
        }
        sessions[id] = session
        if let session { byUser[session.userId, default: []].insert(id) }
    }

    private mutating func ended(_ user: UserID, at: Date) {
        lastEnded[user] = max(lastEnded[user] ?? at, at)
    }

    // MARK: questions

    /// When `session` stopped (or stops) being live, nil while it is live at `now`.
    func deadSince(_ session: Session, now: Date) -> Date? {
        guard session.attached else { return session.since }
        let processes = gateways[session.gatewayId] ?? [:]
        guard let instanceId = session.instance, let instance = processes[instanceId] else {
            // No announcement of its process: the benefit of the doubt, for `gatewayTimeout`.
            let expiry = session.since.addingTimeInterval(gatewayTimeout)
            return now < expiry ? nil : expiry
        }
        if instance.stopped { return instance.lastAlive }
        // A newer process of the same gateway id: this one is gone.
        if let successor = processes.values.filter({ $0.startedAt > instance.startedAt }).map(\.startedAt).min() { return successor }
        let expiry = instance.lastAlive.addingTimeInterval(gatewayTimeout)
        return now < expiry ? nil : instance.lastAlive
    }

    /// The users with at least one live session at `now`.
    func onlineUsers(now: Date) -> Set<UserID> {
        var online = Set<UserID>()
        for session in sessions.values where !online.contains(session.userId) && deadSince(session, now: now) == nil {
            online.insert(session.userId)
        }
        return online
    }

    /// When an offline user was last seen: their latest session end, or the moment the gateway
    /// holding a session of theirs was last heard from; nil when never seen.
    func lastSeen(_ user: UserID, now: Date) -> Date? {
        var latest = lastEnded[user]
        for id in byUser[user] ?? [] {
            if let session = sessions[id], let dead = deadSince(session, now: now) { latest = max(latest ?? dead, dead) }
        }
        return latest
    }

    /// Forgets what can no longer matter: sessions dead for longer than `horizon` (their
    /// gateway crashed, or they were detached and their gateway will not close them) and processes with no session left that
    /// stopped or went silent that long ago. Keeps the table bounded across gateway restarts.
    mutating func prune(now: Date, horizon: TimeInterval) {
        let cutoff = now.addingTimeInterval(-horizon)
        for (id, session) in sessions {
            if let dead = deadSince(session, now: now), dead < cutoff {
                ended(session.userId, at: dead)
                set(id, nil)
            }
        }
        let used = Set(sessions.values.compactMap { s in s.instance.map { "\(s.gatewayId)/\($0)" } })
        for (gateway, processes) in gateways {
            let kept = processes.filter { id, p in used.contains("\(gateway)/\(id)") || p.lastAlive >= cutoff }
            gateways[gateway] = kept.isEmpty ? nil : kept
        }
    }
}
