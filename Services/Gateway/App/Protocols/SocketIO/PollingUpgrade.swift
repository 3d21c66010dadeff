import NIOCore
import NIOWebSocket
import Synchronization

/// A polling session's upgrade on its WebSocket (its packets arrive one at a time, in order).
final class PollingUpgrade: Sendable {
    private enum Phase { case probe, upgrading, done }

    private let session: EngineSession
    private let server: SocketIOServer
    private let channel: any Channel
    private let phase = Mutex(Phase.probe)

    init(session: EngineSession, server: SocketIOServer, channel: any Channel) {
        self.session = session
        self.server = server
        self.channel = channel
    }

    var inProgress: Bool { phase.withLock { $0 != .done } }

    /// `2probe` is answered `3probe` and the pending poll released; `5` switches the session to
    /// this WebSocket. Anything else ends the WebSocket: before the probe the polling session
    /// stays as it was (the client keeps polling), after it the session closes.
    func receive(_ text: String) async -> Bool {
        switch phase.withLock({ $0 }) {
        case .probe:
            guard text == "2probe", !session.isClosed else { return await end() }
            do {
                try await channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: "3probe"))).get()
            } catch {
                return false
            }
            phase.withLock { $0 = .upgrading }
            session.beginUpgrade()
            return true
        case .upgrading:
            guard text == "5" else {
                phase.withLock { $0 = .done }
                server.close(session, reason: "upgrade not completed")
                return await end()
            }
            session.completeUpgrade()
            session.attach(ChannelWriter(detached: channel, batchers: server.hub.writeBatchers), first: [])
            phase.withLock { $0 = .done }
            return true
        case .done:
            return true
        }
    }

    /// Ends the WebSocket with a normal close.
    private func end() async -> Bool {
        await DetachedWebSocketHandler.sendClose(code: 1000, reason: nil, on: channel)
        return false
    }

    /// The WebSocket ended before the upgrade completed.
    func ended() {
        let upgrading = phase.withLock { phase in
            defer { phase = .done }
            return phase == .upgrading
        }
        if upgrading { server.close(session, reason: "upgrade not completed") }
    }
}
