import Configuration
import Foundation
import ServiceKit

/// The settings every real-time protocol shares (docs/configuration.md, docs/realtime.md).
struct RealtimeSettings: Sendable {
    /// This gateway's id: the key of its deliveries, interest records and sessions (`gateway.id`;
    /// unset: `GatewayIdentity`). Must be unique among running gateways and stable across restarts.
    var gatewayId: String
    /// A WebSocket write that takes longer drops the connection (the client stopped reading).
    var writeTimeout: Duration
    /// How many recent event ids are remembered to drop redeliveries.
    var dedupeWindow: Int
    /// Minimum time between two forwarded typing events of one client in one conversation.
    var typingInterval: Duration
    /// How long presence changes gather before a workspace's batch goes to its native sessions.
    var presenceBatchWindow: Duration
    /// A write drain reaching several sockets sends to them with one io_uring submission where the
    /// kernel allows it (`SocketRing`), else with a `sendmsg` each.
    var sendRing: Bool

    init(_ settings: ServiceSettings) throws {
        gatewayId = GatewayIdentity.id(
            configured: settings.reader.string(forKey: "gateway.id"), instanceId: settings.reader.string(forKey: "instance.id"),
            hostname: ProcessInfo.processInfo.hostName, pid: ProcessInfo.processInfo.processIdentifier)
        writeTimeout = .milliseconds(try settings.int("gateway.realtime.write-timeout-ms"))
        dedupeWindow = try settings.int("gateway.realtime.dedupe-window")
        typingInterval = .seconds(3)
        let presenceBatchMilliseconds = try settings.int("gateway.realtime.presence-batch-ms")
        presenceBatchWindow = .milliseconds(presenceBatchMilliseconds)
        sendRing = try settings.bool("gateway.realtime.send-ring")
        guard writeTimeout >= .milliseconds(100), dedupeWindow >= 1 else {
            throw StartupError("gateway.realtime.write-timeout-ms must be at least 100 and gateway.realtime.dedupe-window positive")
        }
        guard (1...10_000).contains(presenceBatchMilliseconds) else {
            throw StartupError("gateway.realtime.presence-batch-ms must be within 1…10000")
        }
    }

    init(
        gatewayId: String, writeTimeout: Duration = .seconds(10), dedupeWindow: Int = 1_000, typingInterval: Duration = .seconds(3),
        presenceBatchWindow: Duration = .milliseconds(250), sendRing: Bool = true
    ) {
        self.gatewayId = gatewayId
        self.writeTimeout = writeTimeout
        self.dedupeWindow = dedupeWindow
        self.typingInterval = typingInterval
        self.presenceBatchWindow = presenceBatchWindow
        self.sendRing = sendRing
    }
}

/// 20 URL-safe characters (120 random bits), like the reference Socket.IO server's ids: every
/// protocol's session ids.
func randomSessionId() -> String {
    var generator = SystemRandomNumberGenerator()
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    var bytes = [UInt8](repeating: 0, count: 20)
    for i in bytes.indices { bytes[i] = alphabet[Int(generator.next() % 64)] }
    return String(decoding: bytes, as: UTF8.self)
}

/// A fixed-size memory of ids: a ring buffer for eviction order plus a set for lookups.
struct RecentIds {
    private var ring: [UUID?]
    private var next = 0
    private var members: Set<UUID> = []

    init(capacity: Int) {
        ring = Array(repeating: nil, count: max(capacity, 1))
    }

    /// Remembers `id`; false when it was already remembered.
    mutating func insert(_ id: UUID) -> Bool {
        guard members.insert(id).inserted else { return false }
        if let evicted = ring[next] { members.remove(evicted) }
        ring[next] = id
        next = (next + 1) % ring.count
        return true
    }
}
