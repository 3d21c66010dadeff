import Synchronization

/// Thrown by `withTimeout` when the deadline passes first.
public struct TimeoutError: Error, CustomStringConvertible, Sendable {
    public let what: String
    public init(what: String) { self.what = what }
    public var description: String { "timed out: \(what)" }
}

/// Runs `body` with a deadline: when it does not finish in time it is cancelled and
/// `TimeoutError` thrown at once — also when `body` is waiting on something that ignores
/// cancellation (a blocking client call, a sequence without a cancellation handler), which a task
/// group would wait for and so never time out. Such a body then finishes on its own, unobserved.
public func withTimeout<T: Sendable>(
    _ duration: Duration,
    _ what: String = "operation",
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let tasks = Mutex<(work: Task<Void, Never>?, timer: Task<Void, Never>?)>((nil, nil))
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let pending = Mutex<CheckedContinuation<T, any Error>?>(continuation)
            @Sendable func finish(_ result: Result<T, any Error>) {
                pending.withLock { pending in
                    defer { pending = nil }
                    return pending
                }?.resume(with: result)
            }
            let work = Task { @Sendable in
                do { finish(.success(try await body())) } catch { finish(.failure(error)) }
            }
            let timer = Task { @Sendable in
                guard (try? await Task.sleep(for: duration)) != nil else { return }
                work.cancel()
                finish(.failure(TimeoutError(what: what)))
            }
            tasks.withLock { $0 = (work, timer) }
            if Task.isCancelled { work.cancel() }  // cancelled before the handler had tasks to cancel
            // Whichever ends first, the other is not needed any more.
            Task { @Sendable in
                _ = await work.value
                timer.cancel()
            }
        }
    } onCancel: {
        let (work, timer) = tasks.withLock { $0 }
        work?.cancel()
        timer?.cancel()
    }
}
