/// Thrown by `withTimeout` when the deadline passes first.
public struct TimeoutError: Error, CustomStringConvertible, Sendable {
    public let what: String
    public init(what: String) { self.what = what }
    public var description: String { "timed out: \(what)" }
}

/// Runs `body` with a deadline; the body is cancelled and `TimeoutError` thrown when it does not
/// finish in time.
public func withTimeout<T: Sendable>(
    _ duration: Duration,
    _ what: String = "operation",
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: duration)
            throw TimeoutError(what: what)
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw TimeoutError(what: what) }
        return first
    }
}
