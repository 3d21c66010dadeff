import Synchronization

/// Runs `body` in a task of its own and answers with the first of two things: what `body`
/// returns or throws, or the error handed to `abandon` (a deadline passed, a connection closed).
/// An abandoned `body` is cancelled and left to end on its own, unobserved — the point, where it
/// waits on something that ignores cancellation, which a task group would wait for.
///
/// `setUp` arranges the abandoning (start a timer, watch a close future) and returns what to undo
/// once the answer is in (cancel the timer). Cancelling the caller cancels `body`.
public func abandoning<T: Sendable>(
    _ body: @escaping @Sendable () async throws -> T,
    setUp: (_ abandon: @escaping @Sendable (any Error) -> Void) -> @Sendable () -> Void
) async throws -> T {
    let work = Mutex<Task<Void, Never>?>(nil)
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let pending = Mutex<CheckedContinuation<T, any Error>?>(continuation)
            let undo = Mutex<(@Sendable () -> Void)?>(nil)
            @Sendable func finish(_ result: Result<T, any Error>) {
                guard
                    let continuation = pending.withLock({ pending in
                        defer { pending = nil }; return pending
                    })
                else { return }
                undo.withLock { $0 }?()
                continuation.resume(with: result)
            }
            let task = Task { @Sendable in
                do { finish(.success(try await body())) } catch { finish(.failure(error)) }
            }
            work.withLock { $0 = task }
            if Task.isCancelled { task.cancel() }  // cancelled before the handler had a task to cancel
            let cleanup = setUp { error in
                // The caller gets the abandon's reason first: cancelled, the body may end with a
                // CancellationError, which callers take for their own cancellation.
                finish(.failure(error))
                task.cancel()
            }
            // The answer may already be in (a fast body): then undo at once. Checked under the
            // undo lock, so an answer that comes meanwhile finds the undo and runs it.
            let undoNow = undo.withLock { undo -> Bool in
                if pending.withLock({ $0 == nil }) { return true }
                undo = cleanup
                return false
            }
            if undoNow { cleanup() }
        }
    } onCancel: {
        work.withLock { $0 }?.cancel()
    }
}
