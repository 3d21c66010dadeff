import ServiceLifecycle

/// One loop for every session's heartbeat (no task per socket): Engine.IO v4 sessions get a ping
/// every ping interval, the first one early by the session's phase (`HeartbeatPhases`); a session
/// that sent nothing for interval + timeout is closed; a WebSocket write that does not finish
/// within the write timeout drops the connection.
struct SocketIOHeartbeat: Service {
    let server: SocketIOServer

    func run() async throws {
        let interval = server.settings.pingInterval
        let timeout = server.settings.pingTimeout
        // `HeartbeatPhases` spreads the pings over the interval, so a tick carries about
        // sessions × tick / interval of them (200 of 5 000 at 25 s), however the sessions opened.
        let tick = min(.seconds(1), interval / 4)
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: tick)
                let now = ContinuousClock.now
                for session in server.allSessions {
                    if session.abortIfStalled(now: now, timeout: server.hub.settings.writeTimeout) {
                        server.close(session, reason: "write timed out")
                        continue
                    }
                    switch session.heartbeat(now: now, interval: interval, timeout: timeout) {
                    case .none: break
                    case .ping:
                        if !session.send(EngineIOPacket.encode(.ping)) { server.close(session, reason: "send queue full") }
                    case .expire:
                        server.close(session, reason: "ping timeout")
                    }
                }
            }
        }
    }
}
