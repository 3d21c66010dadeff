import ClientContract
import Foundation
import NIOCore
import Synchronization

/// One Engine.IO session (one client connection, whatever its transport), with its Socket.IO
/// namespaces. State lives behind a mutex; the one suspended reader (a pending poll or the
/// WebSocket writer) is resumed outside it.
///
/// Kept small for idle sockets: the queue is empty, the namespaces a short array.
final class EngineSession: ChannelWriteListener {
    enum Transport: Sendable { case polling, upgrading, websocket }

    /// Why `next()` returned no packets.
    enum Wait: Sendable { case packets([OutboundText]), closed, busy }

    private struct State: Sendable {
        var outbox: OutboundQueue
        var waiter: CheckedContinuation<Wait, Never>?
        /// Drops the WebSocket's TCP connection (set once the session is on a WebSocket).
        var abort: (@Sendable () -> Void)?
        /// The WebSocket's writer once the session is on it: packets go straight to the channel.
        var direct: ChannelWriter?
        /// The close frame's task, started when the session closed on its WebSocket.
        var closing: Task<Void, Never>?
        /// Whether the session ended because the client fell too far behind.
        var tooSlow = false
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
    /// The study-app uid of a verified Firebase `idtoken` header on the handshake, if any.
    let studyUid: String?
    /// The client's address (the join limit's key).
    let clientAddress: String
    /// Closes the session when the hub's deliveries overflow its queue.
    private let server: SocketIOServer
    private let state: Mutex<State>

    init(
        id: String, version: EngineIOVersion, transport: Transport, userId: String?, studyUid: String? = nil, clientAddress: String,
        maxQueuedPackets: Int, maxQueuedBytes: Int, firstPingAdvance: Duration, server: SocketIOServer
    ) {
        self.studyUid = studyUid
        self.server = server
        self.id = id
        self.version = version
        self.userId = userId
        self.clientAddress = clientAddress
        let now = ContinuousClock.now
        state = Mutex(
            State(
                outbox: OutboundQueue(maxBytes: maxQueuedBytes, maxFrames: maxQueuedPackets), transport: transport, lastInbound: now,
                // The first ping is due one interval after this, so `firstPingAdvance` earlier than a full interval after the open.
                lastPing: now - firstPingAdvance
            ))
    }

    var isClosed: Bool { state.withLock { $0.closed } }
    var transport: Transport { state.withLock { $0.transport } }

    /// Queues packets for the client. False when the session is closed or its queue is full (a
    /// client that does not read: the caller closes the session rather than buffer without bound).
    @discardableResult
    func send(_ packets: String...) -> Bool {
        send(contentsOf: FrameList(packets.map(OutboundText.init)))
    }

    /// Queues one packet (shared by every session it goes to).
    func send(_ packet: consuming OutboundText) -> Bool {
        send(contentsOf: FrameList(packet))
    }

    func send(contentsOf packets: consuming FrameList) -> Bool {
        let count = packets.byteCount
        let number = packets.count
        // Moved into the lock's closure, not copied (`EventLoopWriteBatcher.write`).
        var moved = Optional(packets)
        let (accepted, waiter, batch) = state.withLock { state -> (Bool, CheckedContinuation<Wait, Never>?, [OutboundText]) in
            guard !state.closed, let packets = moved.take() else { return (false, nil, []) }
            guard state.outbox.accepts(frames: number, bytes: count) else {
                state.tooSlow = true
                return (false, nil, [])
            }
            if state.direct != nil {
                // Queued on the channel's loop under this lock: packets keep their order.
                state.outbox.handedToChannel(frames: number, bytes: count)
                state.direct?.write(packets, receipt: WriteReceipt(self, frames: number, bytes: count))
                return (true, nil, [])
            }
            if let waiter = state.waiter {
                state.waiter = nil
                let batch = state.outbox.take() + packets
                state.outbox.handedOver(count: count)
                return (true, waiter, batch)
            }
            state.outbox.append(packets, count: count)
            return (true, nil, [])
        }
        waiter?.resume(returning: .packets(batch))
        return accepted
    }

    /// The channel took frames handed to it: they no longer count against the bound.
    func channelWrote(frames: Int, bytes: Int) {
        state.withLock { $0.outbox.channelWrote(frames: frames, bytes: bytes) }
    }

    /// The session is on its WebSocket for good: `first` (the open packet of a new session),
    /// then what is queued, then every later packet go straight to the channel.
    func attach(_ writer: ChannelWriter, first: [OutboundText]) {
        state.withLock { state in
            let pending = first + state.outbox.take()
            if !pending.isEmpty {
                // The queued packets' bytes are counted already; `first` never was.
                let count = pending.byteCount - first.byteCount
                state.outbox.handedToChannel(frames: pending.count, bytes: 0)
                writer.write(FrameList(pending), receipt: WriteReceipt(self, frames: pending.count, bytes: count))
            }
            state.direct = writer
            if state.closed { state.closing = writer.close(code: state.tooSlow ? 1008 : 1000, reason: state.tooSlow ? "too far behind" : nil) }
        }
    }

    /// The close frame's task once the session closed on its WebSocket (awaited before the
    /// connection's handler returns, so the code is this one).
    var closingTask: Task<Void, Never>? { state.withLock { $0.closing } }

    /// The writer (or a poll's answer) delivered `bytes`: they no longer count against the bound.
    func written(bytes: Int) {
        state.withLock { $0.outbox.written(bytes) }
    }

    /// The session is on a WebSocket: `abort` drops its connection.
    func attach(abort: @escaping @Sendable () -> Void) {
        state.withLock { $0.abort = abort }
    }

    /// Drops the WebSocket when the writer made no progress (no packet written) within
    /// `timeout`; true when it did.
    func abortIfStalled(now: ContinuousClock.Instant, timeout: Duration) -> Bool {
        let abort = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.outbox.isStalled(now: now, timeout: timeout) else { return nil }
            state.tooSlow = true
            return state.abort
        }
        abort?()
        return abort != nil
    }

    /// Drops the WebSocket if its writer is in a write (a client too far behind may never read
    /// again: its close frame would wait behind that write forever).
    func abortIfWriting() {
        let abort = state.withLock { $0.outbox.writeStarted != nil ? $0.abort : nil }
        abort?()
    }

    /// Whether the session ended (or is ending) because the client fell too far behind.
    var isTooSlow: Bool { state.withLock { $0.tooSlow } }

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
                if !state.outbox.isEmpty { return .packets(state.outbox.take()) }
                if poll && state.transport == .upgrading { return .packets([OutboundText(EngineIOPacket.encode(.noop))]) }
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
        waiter?.resume(returning: .packets([OutboundText(EngineIOPacket.encode(.noop))]))
    }

    /// The client sent `upgrade`: from now on the WebSocket carries everything.
    func completeUpgrade() {
        let waiter = state.withLock { state -> CheckedContinuation<Wait, Never>? in
            state.transport = .websocket
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: .packets([OutboundText(EngineIOPacket.encode(.noop))]))
    }

    /// Marks the session closed and wakes its reader. True only for the call that closed it.
    func markClosed() -> Bool {
        let (closedNow, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Wait, Never>?) in
            guard !state.closed else { return (false, nil) }
            state.closed = true
            state.outbox.clear()
            if let direct = state.direct {
                // After the packets already on the channel's loop.
                state.closing = direct.close(code: state.tooSlow ? 1008 : 1000, reason: state.tooSlow ? "too far behind" : nil)
            }
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

    var namespaceCount: Int { state.withLock { $0.namespaces.count } }

    /// The connected conversation namespace a client names (as it joined it).
    func connectedNamespace(named name: String) -> ConversationNamespace? {
        state.withLock { state in state.namespaces.first { $0.name == name } }
    }

    /// Marks the default namespace connected; false when it already was.
    func connectDefaultNamespace() -> Bool {
        state.withLock { state in
            defer { state.defaultNamespaceConnected = true }
            return !state.defaultNamespaceConnected
        }
    }

    var announcedUserId: String? { state.withLock { $0.announcedUserId } }

    /// Records the study-app uid the client announced; the one it replaces (nil: none, or the same).
    func announce(userId: String) -> (replaced: String?, isNew: Bool) {
        state.withLock { state in
            guard !state.closed, state.announcedUserId != userId else { return (nil, false) }
            defer { state.announcedUserId = userId }
            return (state.announcedUserId, true)
        }
    }
}

extension EngineSession: LiveSubscriber {
    /// The SeSAC contract has no presence event.
    var presenceUpdates: PresenceUpdates { .none }

    /// A namespace's events: `channel` / `dm` for new messages (the contract's events, exactly),
    /// the event's dispatch type for the rest (docs/realtime.md); one packet per namespace,
    /// shared by its sessions. Presence and community signals name no namespace: not sent.
    func deliver(_ delivery: LiveDelivery, for follow: LiveFollow) {
        if follow.kind == .studyUser {
            // The study app's `chat` event on the default namespace (client contract §3.2).
            guard case .studyChat = delivery.event else { return }
            let packet = delivery.rendering(.init(format: .socketIO, target: nil)) {
                SocketIOEncoder.eventFrame("/", name: "chat", json: $0.payload)
            }
            if !send(packet) { server.close(self, reason: "send queue full") }
            return
        }
        guard let namespace = ConversationNamespace(follow) else { return }
        if namespace.generationAAlias != nil {
            // Lilac listens for new chats only, in Gen A's shape.
            guard case .channelMessage(let message) = delivery.event else { return }
            let packet = delivery.rendering(.init(format: .socketIOGenerationA, target: follow.id)) { _ in
                SocketIOEncoder.eventFrame(namespace.name, name: namespace.eventName, json: GenerationAChatPayload(message).jsonBuffer)
            }
            if !send(packet) { server.close(self, reason: "send queue full") }
            return
        }
        let name: String
        switch delivery.event {
        case .channelMessage, .directMessage: name = namespace.eventName
        case .presence, .presenceBatch, .signal: return
        default: name = delivery.event.dispatchType
        }
        let packet = delivery.rendering(.init(format: .socketIO, target: follow.id)) {
            SocketIOEncoder.eventFrame(namespace.name, name: name, json: $0.payload)
        }
        if !send(packet) { server.close(self, reason: "send queue full") }
    }

    /// The namespace ends with a Socket.IO disconnect packet.
    func revoked(_ follow: LiveFollow) {
        guard let namespace = ConversationNamespace(follow), disconnect(namespace) else { return }
        if !send(SocketIOEncoder.disconnect(namespace.name)) { server.close(self, reason: "send queue full") }
    }
}
