import ServiceKit

/// STOMP over WebSocket's settings (docs/stomp.md, docs/configuration.md).
struct StompSettings: Sendable {
    /// Largest frame (command, headers and body) and WebSocket message accepted from a client.
    var maxFrameBytes: Int
    /// Most headers in one client frame, and the longest header line.
    var maxHeaders: Int
    var maxHeaderLineBytes: Int
    /// Subscriptions one connection may hold at once.
    var maxSubscriptions: Int
    /// The server's heart-beat offer (`CONNECTED`'s `heart-beat: x,x`): it can send every this
    /// often and wants to hear from the client every this often (the negotiation takes the larger
    /// of each side's numbers). A client silent for twice the negotiated interval is dropped.
    var heartbeat: Duration
    /// A WebSocket that sends no `CONNECT` within this is closed.
    var connectTimeout: Duration
    /// Frames and bytes queued for a client that does not read; beyond either it is dropped.
    var maxQueuedFrames: Int
    var maxQueuedBytes: Int
    /// Where frames link attachments (from the Smooth settings, `SmoothSettings`).
    var files = StompFileLinks()

    init(_ settings: ServiceSettings) throws {
        maxFrameBytes = try settings.int("gateway.stomp.max-frame-bytes")
        maxHeaders = try settings.int("gateway.stomp.max-headers")
        maxHeaderLineBytes = try settings.int("gateway.stomp.max-header-line-bytes")
        maxSubscriptions = try settings.int("gateway.stomp.max-subscriptions")
        heartbeat = .milliseconds(try settings.int("gateway.stomp.heartbeat-ms"))
        connectTimeout = .milliseconds(try settings.int("gateway.stomp.connect-timeout-ms"))
        maxQueuedFrames = try settings.int("gateway.stomp.max-queued-frames")
        maxQueuedBytes = try settings.int("gateway.stomp.max-queued-bytes")
        guard maxFrameBytes >= 1024, maxHeaders >= 8, maxHeaderLineBytes >= 256, maxSubscriptions >= 1, heartbeat >= .milliseconds(100),
            connectTimeout >= .milliseconds(100), maxQueuedFrames >= 1, maxQueuedBytes >= 65_536
        else {
            throw StartupError("gateway.stomp.* settings out of range (see docs/configuration.md)")
        }
    }

    var heartbeatMilliseconds: Int { Int(heartbeat.components.seconds * 1000 + heartbeat.components.attoseconds / 1_000_000_000_000_000) }
}
