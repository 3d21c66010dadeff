import Dispatch
import Synchronization

extension KafkaConsumer {
    /// `consumeFetchingOnPollThread` for a handler that awaits (a database transaction): each
    /// batch (messages only) is handled by `handler` on the cooperative pool while the poll
    /// thread waits for it, so batches are handled one after another, in order, and the next
    /// fetch goes out once the batch before it was handled. Cancelling the calling task cancels
    /// the batch being handled; what `handler` throws ends the loop and is rethrown.
    public func consumeFetching(_ handler: @escaping @Sendable (_ batch: [KafkaConsumerMessage]) async throws -> Void) async throws {
        try await consumeFetchingOnPollThread { events, stopping in
            let batch = events.compactMap(\.message)
            guard !batch.isEmpty else { return }
            let outcome = AwaitedOutcome()
            let task = Task { await outcome.finish(Result(catching: { try await handler(batch) })) }
            while !outcome.wait(for: .milliseconds(100)) {
                if stopping() { task.cancel() }
            }
            try outcome.result?.get()
        }
    }
}

/// The outcome of a handler run on the cooperative pool, waited for on a poll thread.
private final class AwaitedOutcome: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let stored = Mutex<Result<Void, any Error>?>(nil)

    var result: Result<Void, any Error>? { stored.withLock { $0 } }

    func finish(_ result: Result<Void, any Error>) {
        stored.withLock { $0 = result }
        done.signal()
    }

    /// Whether it finished within `timeout` (blocks the calling thread: never a pool thread).
    func wait(for timeout: DispatchTimeInterval) -> Bool { done.wait(timeout: .now() + timeout) == .success }
}

extension Result where Failure == any Error {
    /// The result of `body`, awaited.
    fileprivate init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
