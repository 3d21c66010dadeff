import Synchronization

/// One Engine.IO session (one client connection, whatever its transport), with its Socket.IO
/// namespaces. State lives behind a mutex; the one suspended reader (a pending poll or the
/// WebSocket writer) is resumed outside it.
///
/// Kept small for idle sockets: the queue is empty, the namespaces a short array.
final class EngineSession: Sendable {
    enum Transport: Sendable { case polling, upgrading, websocket }

    /// Why `next()` returned no packets.
    enum Wait: Sendable { case packets([String]), closed, busy }

    private struct State: Sendable {
        var outbox: [String] = []
        var waiter: CheckedContinuation<Wait, Never>?
        var transport: Transport
        var closed = false
        var lastInbound: ContinuousClock.Instant
        var lastPing: ContinuousClock.Instant
        var namespaces: [ConversationNamespace] = []
        var defaultNamespaceConnected = false
        /// The uid the study app sends with `changesocketid` on the default namespace.
        var announcedUserId: String?
    }

    let id: String
    let version: EngineIOVersion
    /// The user of a verified `Authorization` header on the handshake, if any.
    let userId: String?
    private let maxQueuedPackets: Int
    private let state: Mutex<State>

    init(id: String, version: EngineIOVersion, transport: Transport, userId: String?, maxQueuedPackets: Int) {
        self.id = id
        self.version = version
        self.userId = userId
        self.maxQueuedPackets = maxQueuedPackets
        let now = ContinuousClock.now
        state = Mutex(State(transport: transport, lastInbound: now, lastPing: now))
    }

    var isClosed: Bool { state.withLock { $0.closed } }
    var transport: Transport { state.withLock { $0.transport } }

    /// Queues packets for the client. False when the session is closed or its queue is full (a
    /// client that does not read: the caller closes the session rather than buffer without bound).
    @discardableResult
    func send(_ packets: String...) -> Bool {
        send(contentsOf: packets)
    }

    func send(contentsOf packets: [String]) -> Bool {
        let (accepted, waiter, batch) = state.withLock { state -> (Bool, CheckedContinuation<Wait, Never>?, [String]) in
            guard !state.closed else { return (false, nil, []) }
            if let waiter = state.waiter {
                state.waiter = nil
                let batch = state.outbox + packets
                state.outbox.removeAll(keepingCapacity: false)
                return (true, waiter, batch)
            }
            guard state.outbox.count + packets.count <= maxQueuedPackets else { return (false, nil, []) }
            state.outbox.append(contentsOf: packets)
            return (true, nil, [])
        }
        waiter?.resume(returning: .packets(batch))
        return accepted
    }

    /// The queued packets, or waits for some. A poll while the session upgrades is answered at
    /// once (a noop when nothing is queued) so the client can finish the upgrade. A second
    /// concurrent reader gets `.busy`.
    func next(poll: Bool) async -> Wait {
        await withCheckedContinuation { (continuation: CheckedContinuation<Wait, Never>) in
            let immediate: Wait? = state.withLock { state in
                if state.closed { return .closed }
                if poll {
                    state.lastInbound = .now
                    if state.transport == .websocket { return .busy }
                }
                if !state.outbox.isEmpty {
                    let batch = state.outbox
                    state.outbox.removeAll(keepingCapacity: false)
                    return .packets(batch)
                }
                if poll && state.transport == .upgrading { return .packets([EngineIOPacket.encode(.noop)]) }
                if state.waiter != nil { return .busy }
                state.waiter = continuation
                return nil
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }

    /// The probe arrived on the new WebSocket: a pending poll returns (with a noop) so the client
    /// stops polling.
    func beginUpgrade() {
        let waiter = state.withLock { state -> CheckedContinuation<Wait, Never>? in
            guard state.transport == .polling else { return nil }
            state.transport = .upgrading
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: .packets([EngineIOPacket.encode(.noop)]))
    }

    /// The client sent `upgrade`: from now on the WebSocket carries everything.
    func completeUpgrade() {
        let waiter = state.withLock { state -> CheckedContinuation<Wait, Never>? in
            state.transport = .websocket
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: .packets([EngineIOPacket.encode(.noop)]))
    }

    /// Marks the session closed and wakes its reader. True only for the call that closed it.
    func markClosed() -> Bool {
        let (closedNow, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Wait, Never>?) in
            guard !state.closed else { return (false, nil) }
            state.closed = true
            state.outbox.removeAll(keepingCapacity: false)
            defer { state.waiter = nil }
            return (true, state.waiter)
        }
        waiter?.resume(returning: .closed)
        return closedNow
    }

    func touch() {
        state.withLock { $0.lastInbound = .now }
    }

    enum HeartbeatAction: Sendable { case none, ping, expire }

    /// v4: the server pings every interval; both versions expire a session that sent nothing for
    /// interval + timeout (v4 clients answer pings, v3 clients ping themselves).
    func heartbeat(now: ContinuousClock.Instant, interval: Duration, timeout: Duration) -> HeartbeatAction {
        state.withLock { state in
            if state.closed { return .none }
            if now - state.lastInbound > interval + timeout { return .expire }
            if version == .v4, now - state.lastPing >= interval {
                state.lastPing = now
                return .ping
            }
            return .none
        }
    }

    // MARK: namespaces

    /// Records a namespace; false when it was already connected.
    func connect(_ namespace: ConversationNamespace) -> Bool {
        state.withLock { state in
            guard !state.closed, !state.namespaces.contains(namespace) else { return false }
            state.namespaces.append(namespace)
            return true
        }
    }

    /// Forgets a namespace; false when it was not connected.
    func disconnect(_ namespace: ConversationNamespace) -> Bool {
        state.withLock { state in
            guard let index = state.namespaces.firstIndex(of: namespace) else { return false }
            state.namespaces.remove(at: index)
            return true
        }
    }

    /// The namespaces still connected (emptied; used when the session ends).
    func takeNamespaces() -> [ConversationNamespace] {
        state.withLock { state in
            defer { state.namespaces = [] }
            return state.namespaces
        }
    }

    /// Marks the default namespace connected; false when it already was.
    func connectDefaultNamespace() -> Bool {
        state.withLock { state in
            defer { state.defaultNamespaceConnected = true }
            return !state.defaultNamespaceConnected
        }
    }

    var announcedUserId: String? { state.withLock { $0.announcedUserId } }

    func announce(userId: String) {
        state.withLock { $0.announcedUserId = userId }
    }
}
