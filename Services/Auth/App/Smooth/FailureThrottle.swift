import Synchronization

/// Failed attempts per key (a client address) in a fixed window: past `limit` failures the key
/// is refused until its window ends. In memory per auth replica. It bounds guessing Smooth's
/// verification codes, which its app checks by value alone (no address to count against).
final class FailureThrottle: Sendable {
    private struct Window {
        var failures: Int
        var started: ContinuousClock.Instant
    }

    let limit: Int
    let window: Duration
    private let windows = Mutex<[String: Window]>([:])
    /// Past this many keys, ended windows are forgotten.
    private let maxKeys: Int

    init(limit: Int, window: Duration, maxKeys: Int = 100_000) {
        self.limit = limit
        self.window = window
        self.maxKeys = maxKeys
    }

    /// Nil when `key` may try; else the seconds until it may again.
    func refusal(_ key: String, now: ContinuousClock.Instant = .now) -> Int? {
        windows.withLock { windows in
            guard let current = windows[key], now - current.started < window, current.failures >= limit else { return nil }
            let left = window - (now - current.started)
            return max(1, Int(left.components.seconds) + (left.components.attoseconds > 0 ? 1 : 0))
        }
    }

    /// Counts one failure of `key`.
    func fail(_ key: String, now: ContinuousClock.Instant = .now) {
        windows.withLock { windows in
            if windows.count >= maxKeys { windows = windows.filter { now - $0.value.started < window } }
            if var current = windows[key], now - current.started < window {
                current.failures += 1
                windows[key] = current
            } else {
                windows[key] = Window(failures: 1, started: now)
            }
        }
    }
}
