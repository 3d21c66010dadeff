import ServiceLifecycle

/// One loop for every native connection and session (no task per socket): identify deadlines,
/// zombie connections, expired detached sessions; at shutdown, checkpoints every session.
struct NativeHeartbeat: Service {
    let gateway: NativeGateway

    func run() async throws {
        await withGracefulShutdownHandler {
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                do { try await Task.sleep(for: .seconds(1)) } catch { break }
                gateway.sweep(now: .now)
            }
        } onGracefulShutdown: {
            gateway.shutdown()
        }
    }
}
