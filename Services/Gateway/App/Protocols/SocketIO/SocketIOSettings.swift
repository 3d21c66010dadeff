import Configuration
import Foundation
import ServiceKit

/// The Socket.IO server's settings (docs/configuration.md, docs/realtime.md).
struct SocketIOSettings: Sendable {
    var pingInterval: Duration
    var pingTimeout: Duration
    /// Largest polling POST body and WebSocket frame accepted.
    var maxPayloadBytes: Int
    /// Packets queued for a client that does not read; beyond this the session is closed.
    var maxQueuedPackets: Int
    /// Bytes queued (or being written) for a client; beyond this the session is closed (1008).
    var maxQueuedBytes: Int
    /// Accept namespace joins without credentials (the existing clients send none).
    var anonymous: Bool

    init(_ settings: ServiceSettings) throws {
        pingInterval = .milliseconds(try settings.int("gateway.socketio.ping-interval-ms"))
        pingTimeout = .milliseconds(try settings.int("gateway.socketio.ping-timeout-ms"))
        maxPayloadBytes = try settings.int("gateway.socketio.max-payload-bytes")
        maxQueuedPackets = try settings.int("gateway.socketio.max-queued-packets")
        maxQueuedBytes = try settings.int("gateway.socketio.max-queued-bytes")
        anonymous = try settings.bool("gateway.socketio.anonymous")
        guard pingInterval > .zero, pingTimeout > .zero, maxPayloadBytes >= 1024, maxQueuedPackets >= 1, maxQueuedBytes >= 65_536
        else {
            throw StartupError("gateway.socketio.* settings must be positive (max-payload-bytes at least 1024)")
        }
    }

    var pingIntervalMilliseconds: Int64 { pingInterval.components.seconds * 1000 + pingInterval.components.attoseconds / 1_000_000_000_000_000 }
    var pingTimeoutMilliseconds: Int64 { pingTimeout.components.seconds * 1000 + pingTimeout.components.attoseconds / 1_000_000_000_000_000 }
}
