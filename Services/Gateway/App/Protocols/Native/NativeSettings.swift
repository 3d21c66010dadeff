import ServiceKit

/// The native `/v1/gateway` protocol's settings (docs/native-gateway.md, docs/configuration.md).
struct NativeSettings: Sendable {
    /// Milliseconds between client heartbeats (sent in hello); 1.5 × this without one closes 4009.
    var heartbeatInterval: Duration
    /// How long a session stays resumable after its connection ended.
    var resumeWindow: Duration
    /// Largest frame accepted from a client.
    var maxFrameBytes: Int
    /// Frames queued for a client that does not read; beyond this the connection is closed.
    var maxQueuedFrames: Int
    /// Bytes queued (or being written) for a client; beyond this the connection closes with 4011.
    var maxQueuedBytes: Int
    /// Recent dispatches remembered per session to resume from (older resumes are refused).
    var resumeMarks: Int
    /// Most messages one resume replays from history (more: 4006, identify anew).
    var replayLimit: Int
    /// Client messages one connection may send per minute (a burst of as many, refilled evenly);
    /// past it the connection closes with 4008.
    var messagesPerMinute: Int

    init(_ settings: ServiceSettings) throws {
        heartbeatInterval = .milliseconds(try settings.int("gateway.native.heartbeat-interval-ms"))
        resumeWindow = .seconds(try settings.int("gateway.native.resume-window-seconds"))
        maxFrameBytes = try settings.int("gateway.native.max-frame-bytes")
        maxQueuedFrames = try settings.int("gateway.native.max-queued-frames")
        maxQueuedBytes = try settings.int("gateway.native.max-queued-bytes")
        resumeMarks = try settings.int("gateway.native.resume-marks")
        replayLimit = try settings.int("gateway.native.replay-limit")
        messagesPerMinute = try settings.int("gateway.native.messages-per-minute")
        guard heartbeatInterval >= .milliseconds(100), resumeWindow > .zero, maxFrameBytes >= 1024, maxQueuedFrames >= 1,
            maxQueuedBytes >= 65_536, resumeMarks >= 1, (1...10_000).contains(replayLimit), messagesPerMinute >= 10
        else {
            throw StartupError("gateway.native.* settings out of range (see docs/configuration.md)")
        }
    }

    /// A connection's message budget a minute: `messagesPerMinute`, plus twice the heartbeats
    /// the interval asks for (a client heartbeating early is not cut off).
    var messageBudgetPerMinute: Int {
        messagesPerMinute + Int(2 * 60_000 / max(heartbeatIntervalMilliseconds, 1))
    }

    var heartbeatIntervalMilliseconds: Int64 {
        heartbeatInterval.components.seconds * 1000 + heartbeatInterval.components.attoseconds / 1_000_000_000_000_000
    }
}
