import Configuration
import Foundation
import ServiceKit

/// The Socket.IO server's settings (docs/configuration.md, docs/realtime.md).
struct SocketIOSettings: Sendable {
    /// This gateway's id: the key of its deliveries and interest records (`gateway.id`; unset:
    /// `GatewayIdentity`). Must be unique among running gateways and stable across restarts.
    var gatewayId: String
    var pingInterval: Duration
    var pingTimeout: Duration
    /// Largest polling POST body and WebSocket frame accepted.
    var maxPayloadBytes: Int
    /// Packets queued for a client that does not read; beyond this the session is closed.
    var maxQueuedPackets: Int
    /// Bytes queued (or being written) for a client; beyond this the session is closed (1008).
    var maxQueuedBytes: Int
    /// A WebSocket write that takes longer drops the connection (the client stopped reading).
    var writeTimeout: Duration
    /// Accept namespace joins without credentials (the existing clients send none).
    var anonymous: Bool
    /// How many recent message ids are remembered to drop redeliveries.
    var dedupeWindow: Int

    init(_ settings: ServiceSettings) throws {
        gatewayId = GatewayIdentity.id(
            configured: settings.reader.string(forKey: "gateway.id"), instanceId: settings.reader.string(forKey: "instance.id"),
            hostname: ProcessInfo.processInfo.hostName, pid: ProcessInfo.processInfo.processIdentifier)
        pingInterval = .milliseconds(try settings.int("gateway.socketio.ping-interval-ms"))
        pingTimeout = .milliseconds(try settings.int("gateway.socketio.ping-timeout-ms"))
        maxPayloadBytes = try settings.int("gateway.socketio.max-payload-bytes")
        maxQueuedPackets = try settings.int("gateway.socketio.max-queued-packets")
        maxQueuedBytes = try settings.int("gateway.socketio.max-queued-bytes")
        writeTimeout = .milliseconds(try settings.int("gateway.realtime.write-timeout-ms"))
        dedupeWindow = try settings.int("gateway.socketio.dedupe-window")
        switch try settings.string("gateway.socketio.anonymous").lowercased() {
        case "true", "1", "yes": anonymous = true
        case "false", "0", "no": anonymous = false
        case let other: throw StartupError("gateway.socketio.anonymous must be true or false, not \(other)")
        }
        guard pingInterval > .zero, pingTimeout > .zero, maxPayloadBytes >= 1024, maxQueuedPackets >= 1, maxQueuedBytes >= 65_536,
            writeTimeout >= .milliseconds(100), dedupeWindow >= 1
        else {
            throw StartupError("gateway.socketio.* settings must be positive (max-payload-bytes at least 1024)")
        }
    }

    var pingIntervalMilliseconds: Int64 { pingInterval.components.seconds * 1000 + pingInterval.components.attoseconds / 1_000_000_000_000_000 }
    var pingTimeoutMilliseconds: Int64 { pingTimeout.components.seconds * 1000 + pingTimeout.components.attoseconds / 1_000_000_000_000_000 }
}
