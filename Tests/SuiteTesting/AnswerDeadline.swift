import Common
import Synchronization

/// Runs `operation` with a deadline that does not wait for it to end.
///
/// HummingbirdTesting's live client (2.28) races a request against its 20 s timeout in a task
/// group, and a group waits for all its children: the request's child awaits a future that only
/// an answer or a closed connection completes (its pipeline has no idle handler). A request the
/// server never answers on an open connection therefore hangs the test for good instead of
/// failing it (a CI run stopped that way, in `BalanceProjectionTests`). Past `timeout` this
/// throws a `TimeoutError` naming `what` and leaves the stuck request behind.
public func withAnswerDeadline<T: Sendable>(
    _ timeout: Duration, _ what: String, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let waiter = AnswerWaiter<T>()
    return try await withCheckedThrowingContinuation { continuation in
        waiter.set(continuation)
        let timer = Task {
            try await Task.sleep(for: timeout)
            waiter.take()?.resume(throwing: TimeoutError(what: "an answer to \(what) within \(timeout)"))
        }
        Task {
            let result: Result<T, any Error>
            do { result = .success(try await operation()) } catch { result = .failure(error) }
            timer.cancel()
            waiter.take()?.resume(with: result)
        }
    }
}

/// The continuation of one `withAnswerDeadline` call: resumed once, by whichever comes first.
private final class AnswerWaiter<T: Sendable>: Sendable {
    private let slot = Mutex<CheckedContinuation<T, any Error>?>(nil)

    func set(_ continuation: CheckedContinuation<T, any Error>) { slot.withLock { $0 = continuation } }
    func take() -> CheckedContinuation<T, any Error>? { slot.withLock { $0.take() } }
}
