import Synchronization

/// One WebSocket of the native protocol: the frames queued for it (taken by its writer task),
/// when the client last sent a heartbeat, and how it is to be closed. A session outlives its
/// connections (a resume attaches a new one).
final class NativeConnection: Sendable {
    enum Next: Sendable {
        case frames([String])
        /// Close with this WebSocket code and reason (after writing what was queued before it).
        case close(code: UInt16, reason: String)
    }

    private struct State: Sendable {
        var outbox: [String] = []
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
    private let maxQueuedFrames: Int
    private let state: Mutex<State>

    init(maxQueuedFrames: Int) {
        self.maxQueuedFrames = maxQueuedFrames
        state = Mutex(State(lastHeartbeat: .now))
    }

    /// Queues frames; false when the connection is closing or its queue is full.
    @discardableResult
    func send(_ frames: String...) -> Bool {
        send(contentsOf: frames)
    }

    func send(contentsOf frames: [String]) -> Bool {
        let (accepted, waiter, batch) = state.withLock { state -> (Bool, CheckedContinuation<Next, Never>?, [String]) in
            guard state.closing == nil else { return (false, nil, []) }
            if let waiter = state.waiter {
                state.waiter = nil
                let batch = state.outbox + frames
                state.outbox.removeAll(keepingCapacity: false)
                return (true, waiter, batch)
            }
            guard state.outbox.count + frames.count <= maxQueuedFrames else { return (false, nil, []) }
            state.outbox.append(contentsOf: frames)
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

    var isClosing: Bool { state.withLock { $0.closing != nil } }

    /// The queued frames, or the close, or waits for either (one writer only).
    func next() async -> Next {
        await withCheckedContinuation { (continuation: CheckedContinuation<Next, Never>) in
            let immediate: Next? = state.withLock { state in
                if !state.outbox.isEmpty {
                    let batch = state.outbox
                    state.outbox.removeAll(keepingCapacity: false)
                    return .frames(batch)
                }
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

    enum Health: Sendable { case fine, notIdentified, zombie }

    /// Not identified within one interval, or no heartbeat for 1.5 intervals.
    func health(now: ContinuousClock.Instant, interval: Duration) -> Health {
        state.withLock { state in
            if state.closing != nil || state.busy { return .fine }
            if !state.identified { return now - opened > interval ? .notIdentified : .fine }
            return now - state.lastHeartbeat > interval * 1.5 ? .zombie : .fine
        }
    }
}
