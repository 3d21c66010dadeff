import Synchronization

/// One WebSocket of a protocol whose frames are written by one writer task (native, STOMP):
/// the frames queued for it (bounded in bytes and number), when the client last sent a heartbeat,
/// whether it identified, and how it is to be closed. A native session outlives its connections
/// (a resume attaches a new one). `LiveSocket` runs the writer and the reading loop.
final class LiveConnection: Sendable {
    enum Next: Sendable {
        case frames([OutboundText])
        /// Close with this WebSocket code and reason (after writing what was queued before it).
        case close(code: UInt16, reason: String)
    }

    private struct State: Sendable {
        var outbox: OutboundQueue
        var waiter: CheckedContinuation<Next, Never>?
        var closing: (code: UInt16, reason: String)?
        var closeTaken = false
        var lastHeartbeat: ContinuousClock.Instant
        var identified = false
        /// An identify or resume is being answered (the reading task waits for chat meanwhile,
        /// so heartbeats are not read): not a zombie.
        var busy = false
    }

    let opened = ContinuousClock.now
    /// Closes the TCP connection at once (a client that stopped reading never takes a close frame).
    private let abort: @Sendable () -> Void
    private let state: Mutex<State>

    init(maxQueuedFrames: Int, maxQueuedBytes: Int, abort: @escaping @Sendable () -> Void = {}) {
        self.abort = abort
        state = Mutex(State(outbox: OutboundQueue(maxBytes: maxQueuedBytes, maxFrames: maxQueuedFrames), lastHeartbeat: .now))
    }

    /// Queues frames; false when the connection is closing or its queue is full.
    @discardableResult
    func send(_ frames: String...) -> Bool {
        send(contentsOf: frames.map(OutboundText.init))
    }

    func send(_ frame: OutboundText) -> Bool {
        send(contentsOf: [frame])
    }

    func send(contentsOf frames: [OutboundText]) -> Bool {
        let count = frames.byteCount
        let (accepted, waiter, batch) = state.withLock { state -> (Bool, CheckedContinuation<Next, Never>?, [OutboundText]) in
            guard state.closing == nil else { return (false, nil, []) }
            guard state.outbox.accepts(frames, count: count) else { return (false, nil, []) }
            if let waiter = state.waiter {
                state.waiter = nil
                let batch = state.outbox.take() + frames
                state.outbox.handedOver(count: count)
                return (true, waiter, batch)
            }
            state.outbox.append(frames, count: count)
            return (true, nil, [])
        }
        waiter?.resume(returning: .frames(batch))
        return accepted
    }

    /// Asks the writer to close the WebSocket after what is queued; the first call wins.
    func close(code: UInt16, reason: String) {
        let waiter = state.withLock { state -> CheckedContinuation<Next, Never>? in
            guard state.closing == nil else { return nil }
            state.closing = (code, reason)
            guard state.outbox.isEmpty, let waiter = state.waiter else { return nil }
            state.waiter = nil
            state.closeTaken = true
            return waiter
        }
        waiter?.resume(returning: .close(code: code, reason: reason))
    }

    /// Closes with `code` without waiting for the queue: what is queued is dropped (the client
    /// fell too far behind to ever read it).
    func closeNow(code: UInt16, reason: String) {
        let (waiter, writing) = state.withLock { state -> (CheckedContinuation<Next, Never>?, Bool) in
            guard state.closing == nil else { return (nil, false) }
            state.closing = (code, reason)
            state.outbox.clear()
            guard let waiter = state.waiter else { return (nil, state.outbox.writeStarted != nil) }
            state.waiter = nil
            state.closeTaken = true
            return (waiter, false)
        }
        waiter?.resume(returning: .close(code: code, reason: reason))
        // A writer in a write may wait on a client that never reads again: drop the connection
        // (the close frame would queue behind that write forever).
        if writing { abort() }
    }

    var isClosing: Bool { state.withLock { $0.closing != nil } }

    /// The queued frames, or the close, or waits for either (one writer only).
    func next() async -> Next {
        await withCheckedContinuation { (continuation: CheckedContinuation<Next, Never>) in
            let immediate: Next? = state.withLock { state in
                if !state.outbox.isEmpty { return .frames(state.outbox.take()) }
                if let closing = state.closing {
                    state.closeTaken = true
                    return .close(code: closing.code, reason: closing.reason)
                }
                state.waiter = continuation
                return nil
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }

    /// The writer's progress (`OutboundQueue.writing` / `idle`): what the write timeout reads.
    func writer(_ update: (inout OutboundQueue) -> Void) {
        state.withLock { update(&$0.outbox) }
    }

    func heartbeat() {
        state.withLock { $0.lastHeartbeat = .now }
    }

    func markIdentified() {
        state.withLock { state in
            state.identified = true
            state.lastHeartbeat = .now
        }
    }

    var isIdentified: Bool { state.withLock { $0.identified } }

    func setBusy(_ busy: Bool) {
        state.withLock { state in
            state.busy = busy
            state.lastHeartbeat = .now
        }
    }

    enum Health: Sendable { case fine, notIdentified, zombie, stalled }

    /// Not identified within one interval, no heartbeat for 1.5 intervals, or a writer that has
    /// not written a frame within `writeTimeout` (the client stopped reading).
    func health(now: ContinuousClock.Instant, interval: Duration, writeTimeout: Duration) -> Health {
        state.withLock { state in
            if state.outbox.isStalled(now: now, timeout: writeTimeout) { return .stalled }
            if state.closing != nil || state.busy { return .fine }
            if !state.identified { return now - opened > interval ? .notIdentified : .fine }
            return now - state.lastHeartbeat > interval * 1.5 ? .zombie : .fine
        }
    }

    /// Drops the TCP connection (its pending write fails and the writer ends).
    func abortConnection() {
        state.withLock { state in
            state.closing = state.closing ?? (1008, "write timed out")
            state.outbox.clear()
        }
        abort()
    }
}
