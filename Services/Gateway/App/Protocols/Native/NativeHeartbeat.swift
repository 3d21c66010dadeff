import ServiceLifecycle

/// One loop for every native connection and session (no task per socket): identify deadlines,
/// zombie connections, expired detached sessions; at shutdown, checkpoints every session.
struct NativeHeartbeat: Service {
    let gateway: NativeGateway

    func run() async throws {
        // The sleep is cancelled at shutdown: the service ends at once, not up to a tick later
        // (services stop one after another, and the launcher gives them 15 s together).
        await withGracefulShutdownHandler {
            try? await cancelWhenGracefulShutdown {
                while true {
                    try await Task.sleep(for: .seconds(1))
                    gateway.sweep(now: .now)
                }
            }
        } onGracefulShutdown: {
            gateway.shutdown()
        }
    }
}
