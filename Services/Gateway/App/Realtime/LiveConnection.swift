import Synchronization

/// One WebSocket of a protocol that queues frames on it (native, STOMP): its frames (bounded in
/// bytes and number while unwritten), when the client last sent a heartbeat, whether it
/// identified, and how it is to be closed. A native session outlives its connections (a resume
/// attaches a new one). `LiveSocket` attaches the WebSocket's `ChannelWriter` and its reading
/// handler; frames sent before that wait in the queue.
final class LiveConnection: ChannelWriteListener {
    private struct State: Sendable {
        var outbox: OutboundQueue
        var closing: (code: UInt16, reason: String)?
        var lastHeartbeat: ContinuousClock.Instant
        var identified = false
        /// An identify or resume is being answered (the connection's messages wait for chat
        /// meanwhile, one at a time, so heartbeats are not read): not a zombie.
        var busy = false
        /// The WebSocket's writer once attached: frames go straight to the channel.
        var direct: ChannelWriter?
        /// The close frame's task, once the close was asked for on an attached connection.
        var closeTask: Task<Void, Never>?
        /// The client's message budget (protocols that limit it), full at first.
        var inbound: TokenBucket?
    }

    let opened = ContinuousClock.now
    /// Closes the TCP connection at once (a client that stopped reading never takes a close frame).
    private let abort: @Sendable () -> Void
    private let state: Mutex<State>

    init(maxQueuedFrames: Int, maxQueuedBytes: Int, abort: @escaping @Sendable () -> Void = {}) {
        self.abort = abort
        state = Mutex(State(outbox: OutboundQueue(maxBytes: maxQueuedBytes, maxFrames: maxQueuedFrames), lastHeartbeat: .now))
    }

    /// Queues frames; false when the connection is closing or its unwritten bytes are over the bound.
    @discardableResult
    func send(_ frames: String...) -> Bool {
        send(contentsOf: FrameList(frames.map(OutboundText.init)))
    }

    func send(_ frame: consuming OutboundText) -> Bool {
        send(contentsOf: FrameList(frame))
    }

    func send(contentsOf frames: consuming FrameList) -> Bool {
        let count = frames.byteCount
        let number = frames.count
        // Moved into the lock's closure, not copied (`EventLoopWriteBatcher.write`).
        var frames = Optional(frames)
        return state.withLock { state -> Bool in
            guard state.closing == nil, state.outbox.accepts(frames: number, bytes: count), let frames = frames.take() else { return false }
            guard state.direct != nil else {
                state.outbox.append(frames, count: count)
                return true
            }
            // Queued on the channel's loop under this lock: frames keep their order.
            state.outbox.handedToChannel(frames: number, bytes: count)
            state.direct?.write(frames, receipt: WriteReceipt(self, frames: number, bytes: count))
            return true
        }
    }

    /// The channel took frames handed to it: they no longer count against the bound.
    func channelWrote(frames: Int, bytes: Int) {
        state.withLock { $0.outbox.channelWrote(frames: frames, bytes: bytes) }
    }

    /// From now on frames go straight to the WebSocket's channel; what was queued first.
    func attach(_ writer: ChannelWriter) {
        state.withLock { state in
            let pending = state.outbox.take()
            if !pending.isEmpty {
                // Their bytes are counted already (queued).
                let count = pending.byteCount
                state.outbox.handedToChannel(frames: pending.count, bytes: 0)
                writer.write(FrameList(pending), receipt: WriteReceipt(self, frames: pending.count, bytes: count))
            }
            state.direct = writer
            if let closing = state.closing, state.closeTask == nil {
                state.closeTask = writer.close(code: closing.code, reason: closing.reason)
            }
        }
    }

    /// The close frame's task once the close was asked for (it ends once the frame is written).
    var closeTask: Task<Void, Never>? { state.withLock { $0.closeTask } }

    /// Closes the WebSocket after the frames sent before; the first call wins.
    func close(code: UInt16, reason: String) {
        state.withLock { state in
            guard state.closing == nil else { return }
            state.closing = (code, reason)
            // Unattached, the close waits for `attach`.
            state.closeTask = state.direct?.close(code: code, reason: reason)
        }
    }

    /// Closes with `code` without waiting for the queue: what is not yet on the channel is
    /// dropped (the client fell too far behind to ever read it).
    func closeNow(code: UInt16, reason: String) {
        let writing = state.withLock { state -> Bool in
            guard state.closing == nil else { return false }
            state.closing = (code, reason)
            state.outbox.clear()
            state.closeTask = state.direct?.close(code: code, reason: reason)
            return state.outbox.writeStarted != nil
        }
        // A write in progress may wait on a client that never reads again: drop the connection
        // (the close frame would queue behind that write forever).
        if writing { abort() }
    }

    var isClosing: Bool { state.withLock { $0.closing != nil } }

    /// Takes one client message from the connection's budget: `perMinute` a minute, in bursts of
    /// as many; false when it is spent.
    func takeMessage(perMinute: Int, now: ContinuousClock.Instant = .now) -> Bool {
        state.withLock { state in
            var bucket = state.inbound ?? TokenBucket(burst: Double(perMinute), now: now)
            let taken = bucket.take(rate: Double(perMinute) / 60, burst: Double(perMinute), now: now)
            state.inbound = bucket
            return taken
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
