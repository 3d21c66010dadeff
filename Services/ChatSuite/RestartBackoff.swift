/// How long the dev launcher waits before restarting a service that exited, like compose's
/// `restart: unless-stopped`: 0.5 s, doubling with every further exit up to 10 s, and back to
/// 0.5 s once a run lasted `stableAfter` (a service that crashes now and then is restarted at
/// once; one that crashes in a loop does not spin).
struct RestartBackoff: Sendable {
    static let initial = Duration.milliseconds(500)
    static let maximum = Duration.seconds(10)
    static let stableAfter = Duration.seconds(30)

    /// Restarts since the last stable run.
    private(set) var attempt = 0
    private var next = Self.initial

    /// Counts a restart after a run that lasted `uptime` and returns the delay before it.
    mutating func delay(afterRunOf uptime: Duration) -> Duration {
        if uptime >= Self.stableAfter {
            attempt = 0
            next = Self.initial
        }
        attempt += 1
        let delay = next
        next = min(next * 2, Self.maximum)
        return delay
    }
}
