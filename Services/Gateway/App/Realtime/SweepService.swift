import ServiceLifecycle

/// One loop for every connection of a protocol (no task per socket): `sweep` every second
/// (identify deadlines, heartbeats, stalled writes, expired sessions); at graceful shutdown the
/// sleep is cancelled, so the service ends at once (services stop one after another, and the dev
/// launcher gives them 15 s together), and `shutdown` runs (checkpoints, closing frames).
struct SweepService: Service {
    let sweep: @Sendable (ContinuousClock.Instant) -> Void
    let shutdown: @Sendable () -> Void

    func run() async throws {
        await withGracefulShutdownHandler {
            try? await cancelWhenGracefulShutdown {
                while true {
                    try await Task.sleep(for: .seconds(1))
                    sweep(.now)
                }
            }
        } onGracefulShutdown: {
            shutdown()
        }
    }
}
