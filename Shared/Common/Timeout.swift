/// Thrown by `withTimeout` when the deadline passes first.
public struct TimeoutError: Error, CustomStringConvertible, Sendable {
    public let what: String
    public init(what: String) { self.what = what }
    public var description: String { "timed out: \(what)" }
}

/// Runs `body` with a deadline: when it does not finish in time it is cancelled and
/// `TimeoutError` thrown at once — also when `body` waits on something that ignores cancellation
/// (a blocking client call, a sequence without a cancellation handler), which a task group would
/// wait for and so never time out (`abandoning`).
public func withTimeout<T: Sendable>(
    _ duration: Duration,
    _ what: String = "operation",
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await abandoning(body) { abandon in
        let timer = Task { @Sendable in
            guard (try? await Task.sleep(for: duration)) != nil else { return }
            abandon(TimeoutError(what: what))
        }
        return { timer.cancel() }
    }
}
