import Common
import Foundation

/// What the sockets saw: every delivery of a measured message (socket, message number, receive
/// instant), probe receipts, and socket-level events. One lock; a few tens of thousands of
/// appends per second are far below what it can take.
final class DeliveryLog: Sendable {
    struct Delivery: Sendable {
        let socket: Int32
        let message: Int32
        let nanos: UInt64
    }

    struct SocketEvents: Sendable {
        var ready = 0
        /// Indexes of the sockets that completed their handshake.
        var readySockets = Set<Int>()
        var failed = 0
        /// Sockets that ended after they were ready (server close, error) before the run stopped.
        var droppedAfterReady = 0
        var errors: [String: Int] = [:]
        /// Native: dispatches whose `s` was not the previous one + 1.
        var sequenceGaps = 0
        /// Frames about other conversations or messages (e.g. another run's).
        var otherMessages = 0
    }

    private let deliveries = Locked<[Delivery]>([])
    private let probes = Locked<Set<Int64>>([])
    private let events = Locked(SocketEvents())
    /// Set when the run is stopping: closes are then expected, not drops.
    let stopping = Latch()

    init(expected: Int) {
        deliveries.withLock { $0.reserveCapacity(expected + expected / 4) }
    }

    func delivered(socket: Int, message: Int, at nanos: UInt64) {
        deliveries.withLock { $0.append(Delivery(socket: Int32(socket), message: Int32(truncatingIfNeeded: message), nanos: nanos)) }
    }

    func probed(socket: Int, channel: Int) {
        _ = probes.withLock { $0.insert(Int64(socket) << 32 | Int64(channel)) }
    }

    func hasProbe(socket: Int, channel: Int) -> Bool {
        probes.withLock { $0.contains(Int64(socket) << 32 | Int64(channel)) }
    }

    func ready(socket: Int) {
        events.withLock {
            $0.ready += 1
            $0.readySockets.insert(socket)
        }
    }
    func other() { events.withLock { $0.otherMessages += 1 } }
    func sequenceGap() { events.withLock { $0.sequenceGaps += 1 } }

    func failed(_ error: String, socket: Int, afterReady: Bool) {
        if afterReady, stopping.isOpen { return }
        events.withLock {
            if afterReady {
                $0.droppedAfterReady += 1
                $0.readySockets.remove(socket)
            } else {
                $0.failed += 1
            }
            $0.errors[error, default: 0] += 1
        }
    }

    var socketEvents: SocketEvents { events.value }
    var allDeliveries: [Delivery] { deliveries.value }
    var deliveryCount: Int { deliveries.withLock { $0.count } }
}

/// The send side: when each message was issued and whether it was accepted.
final class SendLog: Sendable {
    struct State: Sendable {
        /// Monotonic instant each message was issued (0: never issued).
        var issued: [UInt64]
        var accepted: [Bool]
        /// Monotonic instant each accepted send was acknowledged: the REST response, or the
        /// broker's acknowledgement of an injected record (0: not acknowledged).
        var acknowledged: [UInt64] = []
        /// Issued later than `lateTolerance` after their slot of the fixed-rate schedule.
        var late = 0
        var maxLagMs = 0.0
        var failures: [String: Int] = [:]
        var firstIssue: UInt64 = 0
        var lastIssue: UInt64 = 0
    }

    private let state: Locked<State>

    init(messages: Int) {
        var initial = State(issued: [UInt64](repeating: 0, count: messages), accepted: [Bool](repeating: false, count: messages))
        initial.acknowledged = [UInt64](repeating: 0, count: messages)
        state = Locked(initial)
    }

    func issued(_ n: Int, at nanos: UInt64, lagMs: Double, late: Bool) {
        state.withLock {
            $0.issued[n] = nanos
            if $0.firstIssue == 0 || nanos < $0.firstIssue { $0.firstIssue = nanos }
            $0.lastIssue = max($0.lastIssue, nanos)
            if late { $0.late += 1 }
            $0.maxLagMs = max($0.maxLagMs, lagMs)
        }
    }

    func finished(_ n: Int, failure: String?, at nanos: UInt64 = monotonicNanos()) {
        state.withLock {
            if let failure {
                $0.failures[failure, default: 0] += 1
            } else {
                $0.accepted[n] = true
                $0.acknowledged[n] = nanos
            }
        }
    }

    var snapshot: State { state.value }
}
