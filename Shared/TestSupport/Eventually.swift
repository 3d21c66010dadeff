/// Polls `condition` every `poll` until it holds; throws `Eventually.TimedOut` (failing the
/// calling test) when it still does not after `timeout`.
public enum Eventually {
    public struct TimedOut: Error, CustomStringConvertible {
        public let description: String
    }

    public static func wait(
        _ what: String, timeout: Duration = .seconds(10), poll: Duration = .milliseconds(5), _ condition: () -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            guard ContinuousClock.now < deadline else { throw TimedOut(description: "timed out after \(timeout): \(what)") }
            try await Task.sleep(for: poll)
        }
    }
}
