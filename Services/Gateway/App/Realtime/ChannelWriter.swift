import Metrics
import NIOCore
import NIOWebSocket
import Synchronization

/// Writes WebSocket frames straight onto connections' NIO channels, batched per event loop.
///
/// Before, each socket had a writer task: a delivery resumed it, it hopped onto
/// hummingbird-websocket's handler actor and then onto the channel's event loop for every frame
/// — three scheduler hand-offs and a task kept alive per idle socket (the sockets have no
/// hummingbird-websocket handler any more: `Realtime/Detached`). Now a delivery appends
/// its frames to the batcher of the socket's event loop; the first append schedules one drain
/// on that loop, which writes everything appended meanwhile (every socket, every event) and
/// flushes each channel once. Frames of one socket keep their order: they are appended under
/// the socket's own lock, and the drains of one loop run in order. The frames are already
/// encoded (`OutboundText`): the drain writes their bytes below NIO's frame encoder
/// (`FrameOutput`), so a rendering shared by many sockets is not encoded again for each.
final class EventLoopWriteBatcher: Sendable {
    private struct Pending: Sendable {
        let output: FrameOutput
        let frames: FrameList
        let receipt: WriteReceipt?
    }

    private struct State {
        var pending: [Pending] = []
        /// The last drain's array, emptied: the next drain's writes reuse its capacity (growing a
        /// fresh array took a few allocations per drain).
        var spare: [Pending] = []
        /// A drain is queued on the loop (since when).
        var scheduled = false
        var scheduledAt = ContinuousClock.now
        /// Open `hold()`s: writes queue without waking the loop.
        var holds = 0
    }

    /// One channel a drain writes to: where its frames go, and the drain's entries for it in
    /// order (by index: an entry's frames and receipt are read in place, not copied).
    private struct Flush {
        let target: FrameTarget
        let first: Int
        /// Later entries for the same channel (rare: a socket written twice before a drain).
        var more: [Int] = []
    }

    /// Who hears a channel's flushed frames were written. One socket's frames are one session's,
    /// so its receipts add up into `receipt`; `others` holds any for another listener. Sendable
    /// (unlike the context beside it), so a write's completion can carry it.
    private struct Receipts: Sendable {
        var receipt: WriteReceipt?
        var others: [WriteReceipt] = []

        mutating func add(_ new: WriteReceipt?) {
            guard let new else { return }
            if let current = receipt {
                if current.listener === new.listener {
                    receipt = WriteReceipt(current.listener, frames: current.frames + new.frames, bytes: current.bytes + new.bytes)
                } else {
                    others.append(new)
                }
            } else {
                receipt = new
            }
        }

        func deliverAll() {
            receipt?.deliver()
            for other in others { other.deliver() }
        }
    }

    let eventLoop: any EventLoop
    private let state = Mutex(State())
    /// How long a queued drain waited for its loop, and how long it took: where a delivery's
    /// time goes between the gateway reading it and the sockets taking it.
    private let drainWait = Timer(label: "gateway_write_drain_wait", preferredDisplayUnit: .seconds)
    private let drainTime = Timer(label: "gateway_write_drain", preferredDisplayUnit: .seconds)
    /// Drains begun, over every batcher: each drain's number marks the outputs it has met.
    private static let drains = Atomic<Int>(0)

    /// The loop's io_uring for drains that write several sockets (`SocketRing`).
    private enum RingState {
        case untried
        case unavailable
        case ready(SocketRing)
    }

    private let ring: NIOLoopBoundBox<RingState>
    private let useRing: Bool

    /// - Parameter sendRing: whether drains that write several sockets do it with one io_uring
    ///   submission (where the kernel allows it).
    init(eventLoop: any EventLoop, sendRing: Bool = true) {
        self.eventLoop = eventLoop
        useRing = sendRing
        ring = .makeBoxSendingValue(.untried, eventLoop: eventLoop)
    }

    /// Queues `frames` for `output`'s channel (on this batcher's loop); `receipt` is delivered on
    /// the loop once they no longer wait on the channel: the socket took them, or the channel closed.
    func write(_ frames: consuming FrameList, to output: FrameOutput, receipt: consuming WriteReceipt?) {
        // Moved into the lock's closure (a value it captured would be copied into the array).
        var entry = Optional(Pending(output: output, frames: frames, receipt: receipt))
        let schedule = state.withLock { state -> Bool in
            if let entry = entry.take() { state.pending.append(entry) }
            return Self.claimDrain(&state, holding: true)
        }
        if schedule { eventLoop.execute { self.drain() } }
    }

    /// Until the matching `release()`, writes queue without waking the loop: a poll's deliveries
    /// cost the loop one wake-up, not one per event.
    func hold() { state.withLock { $0.holds += 1 } }

    /// Whether a `hold()` is open (writes queue without waking the loop).
    var isHeld: Bool { state.withLock { $0.holds > 0 } }

    /// Ends a `hold()`; the last one queues one drain for what was written meanwhile.
    func release() {
        let schedule = state.withLock { state -> Bool in
            state.holds -= 1
            return Self.claimDrain(&state, holding: true)
        }
        if schedule { eventLoop.execute { self.drain() } }
    }

    /// Queues a drain for what is pending now, hold or not: whatever the caller then runs on the
    /// loop (a close frame) comes after those frames.
    func drainPending() {
        let schedule = state.withLock { Self.claimDrain(&$0, holding: false) }
        if schedule { eventLoop.execute { self.drain() } }
    }

    /// Whether the caller must queue a drain (and it is now marked queued): something is pending,
    /// none is queued, and — when `holding` counts — no hold is open.
    private static func claimDrain(_ state: inout State, holding: Bool) -> Bool {
        guard !state.pending.isEmpty, !state.scheduled, !holding || state.holds == 0 else { return false }
        state.scheduled = true
        state.scheduledAt = .now
        return true
    }

    /// The largest array a drain keeps for the next (a burst's larger one is freed).
    private static let maxSpareCapacity = 1024

    /// Writes what is pending now (on the loop; tests call it to run a drain at a chosen moment).
    func drain() {
        var (batch, scheduledAt) = state.withLock { state -> ([Pending], ContinuousClock.Instant) in
            defer {
                state.pending = state.spare
                state.spare = []
                state.scheduled = false
            }
            return (state.pending, state.scheduledAt)
        }
        guard !batch.isEmpty else { return }
        defer {
            batch.removeAll(keepingCapacity: true)
            state.withLock { state in
                if state.spare.capacity < batch.capacity, batch.capacity <= Self.maxSpareCapacity { state.spare = batch }
            }
        }
        let start = ContinuousClock.now
        drainWait.record(duration: scheduledAt.duration(to: start))
        defer { drainTime.record(duration: start.duration(to: .now)) }
        let drainNumber = Self.drains.wrappingAdd(1, ordering: .relaxed).newValue
        // Per channel, in the order first written to: where its frames go, and its entries. An
        // output remembers its place in this drain, so a socket written twice is flushed once,
        // with no lookup table per drain. Entries are read in place by index throughout: copying
        // one (its output, frames and receipt) cost a retain and a release each.
        var flushes: [Flush] = []
        flushes.reserveCapacity(batch.count)
        for index in batch.indices {
            guard let (target, slot) = batch[index].output.enter(drain: drainNumber, nextSlot: flushes.count) else {
                batch[index].receipt?.deliver()
                continue
            }
            if slot == flushes.count {
                flushes.append(Flush(target: target, first: index))
            } else {
                flushes[slot].more.append(index)
            }
        }
        if flushes.count > 1, let ring = sendRing() {
            send(flushes, of: batch, through: ring)
        } else {
            for index in flushes.indices { send(flushes[index], of: batch) }
        }
    }

    /// The loop's `SocketRing`, made at the first drain that writes several sockets; nil where
    /// the kernel refuses io_uring, or it is switched off.
    private func sendRing() -> SocketRing? {
        switch ring.value {
        case .ready(let ring): return ring
        case .unavailable: return nil
        case .untried:
            let made = useRing ? SocketRing(entries: Self.ringEntries) : nil
            ring.value = made.map { .ready($0) } ?? .unavailable
            return made
        }
    }

    /// Sockets per submission, and their buffers (`SocketDirectWrite.send(_:through:)` nests a
    /// scope per socket and per buffer: this bounds the depth).
    private static let ringEntries = 32
    private static let ringPieces = 256

    /// The drain's channels, those that may be written directly in submissions of the ring
    /// (`ringEntries` sockets or `ringPieces` buffers each at most), the others one by one.
    private func send(_ flushes: [Flush], of batch: [Pending], through ring: SocketRing) {
        var pieces = 0
        func submit() {
            ringWrites.add(ring.items.count, ordering: .relaxed)
            ring.submit { _, owner, item, sent in
                let flush = flushes[owner]
                guard let context = flush.target.encoder else { return }
                finish(item.frames, flush, of: batch, sent: sent, on: context)
            }
            pieces = 0
        }
        for index in flushes.indices {
            let flush = flushes[index]
            guard flush.more.isEmpty, let context = flush.target.encoder,
                let transport = SocketDirectWrite.mayWrite(batch[flush.first].frames, on: context, through: flush.target)
            else {
                send(flush, of: batch)
                continue
            }
            let itemPieces = batch[flush.first].frames.pieceCount
            if pieces + itemPieces > Self.ringPieces { submit() }
            ring.items.append(SocketDirectWrite.Item(frames: batch[flush.first].frames, transport: transport))
            ring.owners.append(index)
            pieces += itemPieces
            if ring.items.count == ring.capacity { submit() }
        }
        if !ring.items.isEmpty { submit() }
    }

    /// One channel's entries: their frames together (one entry's in place).
    private func send(_ flush: Flush, of batch: [Pending]) {
        if flush.more.isEmpty {
            send(batch[flush.first].frames, flush, of: batch)
        } else {
            var frames = batch[flush.first].frames
            for index in flush.more { frames.append(contentsOf: batch[index].frames) }
            send(frames, flush, of: batch)
        }
    }

    /// One channel's frames: straight to its socket when NIO holds nothing for it
    /// (`SocketDirectWrite`), and whatever the socket did not take through NIO, flushed.
    private func send(_ frames: FrameList, _ flush: Flush, of batch: [Pending]) {
        guard let context = flush.target.encoder else {
            // Never: `FrameOutput` hands out a target only once it is attached.
            Self.receipts(of: flush, in: batch).deliverAll()
            return
        }
        if let sent = SocketDirectWrite.send(frames, on: context, through: flush.target) {
            finish(frames, flush, of: batch, sent: sent, on: context)
        } else {
            Self.write(frames, to: context)
            flushed(flush, of: batch, on: context)
        }
    }

    /// After `sent` of `frames`' bytes went straight to the socket: the receipts when that was
    /// all, else the rest through NIO.
    private func finish(_ frames: FrameList, _ flush: Flush, of batch: [Pending], sent: Int, on context: ChannelHandlerContext) {
        if sent == frames.wireBytes {
            directWrites.add(1, ordering: .relaxed)
            if flush.more.isEmpty {
                batch[flush.first].receipt?.deliver()
            } else {
                Self.receipts(of: flush, in: batch).deliverAll()
            }
            return
        }
        partialWrites.add(1, ordering: .relaxed)
        for buffer in SocketDirectWrite.remainder(of: frames, after: sent) { context.write(NIOAny(buffer), promise: nil) }
        flushed(flush, of: batch, on: context)
    }

    /// NIO holds the channel's frames (or their rest): flushed, with the receipts once written.
    private func flushed(_ flush: Flush, of batch: [Pending], on context: ChannelHandlerContext) {
        context.flush()
        let receipts = Self.receipts(of: flush, in: batch)
        if receipts.receipt != nil { Self.reportWritten(receipts, on: context) }
    }

    /// The receipts of a channel's entries, each listener's added up.
    private static func receipts(of flush: Flush, in batch: [Pending]) -> Receipts {
        var receipts = Receipts()
        receipts.add(batch[flush.first].receipt)
        for index in flush.more { receipts.add(batch[index].receipt) }
        return receipts
    }

    /// Channels whose frames a drain sent straight to the socket, whole; and those whose socket
    /// took only part (the rest went through NIO). For tests.
    let directWrites = Atomic<Int>(0)
    let partialWrites = Atomic<Int>(0)
    /// Channels whose frames went to the socket in a `SocketRing` submission. For tests.
    let ringWrites = Atomic<Int>(0)

    /// Delivers `receipts` once the socket has taken every byte flushed so far (or the
    /// channel closed). Usually the flush wrote everything at once and they are delivered now,
    /// with no promise per write (a promise and its callbacks per socket per message were ~5 % of
    /// the gateway's CPU). A socket that did not take it all (its client reads slowly) gets an
    /// empty write whose promise completes after the bytes before it.
    private static func reportWritten(_ receipts: Receipts, on context: ChannelHandlerContext) {
        if let options = context.channel.syncOptions, ((try? options.getOption(.bufferedWritableBytes)) ?? 0) == 0 {
            // All written, or the channel is closed (nothing waits on it any more).
            receipts.deliverAll()
            return
        }
        let promise = context.eventLoop.makePromise(of: Void.self)
        promise.futureResult.whenComplete { _ in receipts.deliverAll() }
        context.writeAndFlush(NIOAny(ByteBuffer()), promise: promise)
    }

    /// Each frame's bytes: header and head, then the shared bytes and the tail when the payload
    /// is shared.
    private static func write(_ frames: FrameList, to context: ChannelHandlerContext) {
        for text in frames {
            context.write(NIOAny(text.frameHead), promise: nil)
            if let shared = text.shared, let tail = text.tail {
                context.write(NIOAny(shared), promise: nil)
                context.write(NIOAny(tail), promise: nil)
            }
        }
    }
}

/// Where a WebSocket's encoded frames enter its pipeline: the context of NIO's
/// `WebSocketFrameEncoder`, so the bytes go on towards the socket without passing the handlers
/// (and the encoder) above it. Control frames (pings, pongs, the close) still go through the
/// whole pipeline; both kinds are written on the channel's loop, in the order they were asked for.
final class FrameOutput: Sendable {
    let channel: any Channel
    /// What only the channel's loop touches: where frames go (found at the first write) and where
    /// this output sits in the drain running now.
    private struct OnLoop {
        var target: FrameTarget?
        var drain = 0
        var slot = 0
    }

    private let onLoop: NIOLoopBoundBox<OnLoop>

    init(channel: any Channel) {
        self.channel = channel
        onLoop = .makeBoxSendingValue(OnLoop(), eventLoop: channel.eventLoop)
    }

    /// The channel's `FrameTarget` (the upgrade put it in the pipeline; a channel without one gets
    /// one that asks NIO before every direct write), with the encoder's context and the socket
    /// under the channel, if it exposes one. Looked up once, since NIO's lookup
    /// (`withUnsafeTransportIfAvailable`) casts to a constrained existential, which the Swift
    /// runtime resolves by demangling on every call (12 % of the gateway's user time when done per
    /// delivery). The socket is used only through its scoped `withUnsafeTransport`, on the loop.
    private static func target(of channel: any Channel, encoder: ChannelHandlerContext) -> FrameTarget {
        let transport = channel._channelCore as? SocketTransport
        guard let target = try? channel.pipeline.syncOperations.handler(type: FrameTarget.self) else {
            // Every WebSocket the gateway upgrades has one (DetachedUpgrade): without it NIO is
            // asked before every direct write, correct but slower.
            assert(transport == nil, "a WebSocket on a socket without a FrameTarget")
            return FrameTarget(unwatchedFor: encoder, transport: transport)
        }
        target.attach(encoder: encoder, transport: transport)
        return target
    }

    /// On the channel's loop, for drain number `drain`: where frames go, and this output's slot
    /// among the drain's channels — `nextSlot` if the drain meets it first now, else the slot it
    /// was given before. Nil once the connection closed.
    func enter(drain: Int, nextSlot: Int) -> (FrameTarget, Int)? {
        Self.enter(&onLoop.value, channel: channel, drain: drain, nextSlot: nextSlot)
    }

    /// One access to the loop's state (each access checks the thread).
    private static func enter(_ state: inout OnLoop, channel: any Channel, drain: Int, nextSlot: Int) -> (FrameTarget, Int)? {
        if state.target == nil, let encoder = try? channel.pipeline.syncOperations.context(handlerType: WebSocketFrameEncoder.self) {
            // In the same turn of the loop: the handlers are there, or (closed) neither is.
            state.target = target(of: channel, encoder: encoder)
        }
        // A target whose pipeline is gone has no encoder (`FrameTarget.handlerRemoved`).
        guard let target = state.target, target.encoder != nil else { return nil }
        if state.drain != drain {
            state.drain = drain
            state.slot = nextSlot
        }
        return (target, state.slot)
    }
}

/// Who hears that frames handed to a channel left it (the socket took them, or it closed): a
/// session's unwritten-bytes bound (`OutboundQueue`).
protocol ChannelWriteListener: AnyObject, Sendable {
    func channelWrote(frames: Int, bytes: Int)
}

/// Frames and bytes to report to a listener once written: a value, so a write allocates no
/// closure for it.
struct WriteReceipt: Sendable {
    let listener: any ChannelWriteListener
    let frames: Int
    let bytes: Int

    init(_ listener: any ChannelWriteListener, frames: Int, bytes: Int) {
        self.listener = listener
        self.frames = frames
        self.bytes = bytes
    }

    func deliver() { listener.channelWrote(frames: frames, bytes: bytes) }
}

/// The batchers of the server's event loops, one each, made on first use.
final class EventLoopWriteBatchers: Sendable {
    private let batchers = Mutex<[ObjectIdentifier: EventLoopWriteBatcher]>([:])
    private let sendRing: Bool

    /// - Parameter sendRing: `EventLoopWriteBatcher.init(eventLoop:sendRing:)`.
    init(sendRing: Bool = true) {
        self.sendRing = sendRing
    }

    /// Runs `body` with every batcher held (`EventLoopWriteBatcher.hold()`): what it writes
    /// reaches each loop in one drain when it returns.
    func holding<T>(_ body: () throws -> T) rethrows -> T {
        let all = batchers.withLock { Array($0.values) }
        for batcher in all { batcher.hold() }
        defer { for batcher in all { batcher.release() } }
        return try body()
    }

    func batcher(for eventLoop: any EventLoop) -> EventLoopWriteBatcher {
        batchers.withLock { batchers in
            let key = ObjectIdentifier(eventLoop)
            if let batcher = batchers[key] { return batcher }
            let batcher = EventLoopWriteBatcher(eventLoop: eventLoop, sendRing: sendRing)
            batchers[key] = batcher
            return batcher
        }
    }
}

/// One WebSocket's outbound side without a writer task: frames go through its event loop's
/// batcher; the close frame is written in a short-lived task started after the frames were
/// queued, so it follows them on the loop (`DetachedWebSocketHandler` then runs the close
/// handshake).
struct ChannelWriter: Sendable {
    let output: FrameOutput
    let batcher: EventLoopWriteBatcher
    /// Sends the close frame.
    private let sendClose: @Sendable (UInt16, String?) async -> Void

    /// `sendClose` sends the close frame (`init(detached:batchers:)` for the gateway's sockets).
    init(channel: any Channel, batcher: EventLoopWriteBatcher, sendClose: @escaping @Sendable (UInt16, String?) async -> Void) {
        self.output = FrameOutput(channel: channel)
        self.batcher = batcher
        self.sendClose = sendClose
    }

    func write(_ frames: consuming FrameList, receipt: consuming WriteReceipt?) {
        batcher.write(frames, to: output, receipt: receipt)
    }

    /// Sends the close frame after everything queued so far.
    func close(code: UInt16, reason: String?) -> Task<Void, Never> {
        batcher.drainPending()  // even during a hold: the close must not overtake them
        let sendClose = self.sendClose
        return Task { await sendClose(code, reason) }
    }
}
