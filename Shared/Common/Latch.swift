import Synchronization

/// A one-shot signal: `open()` once, and every `wait()` (before or after) returns.
public final class Latch: Sendable {
    private struct State {
        var open = false
        var nextWaiter = 0
        /// By id, so that a cancelled waiter can be taken out.
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    public var isOpen: Bool { state.withLock { $0.open } }

    public func open() {
        let waiters = state.withLock { s in
            s.open = true
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        waiters.forEach { $0.resume() }
    }

    /// Returns once the latch is open, whatever happens to the task meanwhile.
    public func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { s -> Bool in
                if s.open { return true }
                s.nextWaiter += 1
                s.waiters[s.nextWaiter] = continuation
                return false
            }
            if open { continuation.resume() }
        }
    }

    /// Returns once the latch is open; throws `CancellationError` if the task is cancelled first
    /// (e.g. by `cancelWhenGracefulShutdown`).
    public func waitUnlessCancelled() async throws {
        // The id is taken first so that the cancellation handler can find this waiter.
        let id = state.withLock { s in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Cancellation sets the task's flag before its handler runs, and both sides take
                // the lock: either the handler finds this waiter, or this sees the flag.
                let resumeNow = state.withLock { s -> Bool in
                    if s.open || Task.isCancelled { return true }
                    s.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
        guard isOpen else { throw CancellationError() }
    }
}
