import AsyncHTTPClient
import Common
import Events
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// The sockets' protocol: `mixed` makes even sockets Socket.IO and odd ones native;
/// `socketio-upgrade` opens each Socket.IO session with a polling handshake and upgrades it to
/// the WebSocket (as socket.io-client-swift does unless `forceWebsockets` is set).
public enum LoadGenProtocol: String, Sendable {
    case socketio, socketioUpgrade = "socketio-upgrade", native, stomp, mixed

    /// The one kind of every socket; nil for `mixed`.
    var socketKind: LoadGenSocketSpec.Kind? {
        switch self {
        case .socketio: .socketio
        case .socketioUpgrade: .socketioUpgrade
        case .native: .native
        case .stomp: .stomp
        case .mixed: nil
        }
    }
}

/// One socket of the run: its user, the channels it follows, its protocol.
struct LoadGenSocketSpec: Sendable {
    enum Kind: String, Sendable { case socketio, socketioUpgrade = "socketio-upgrade", native, stomp, nchan }
    let index: Int
    let kind: Kind
    let token: String
    /// (channel index, channel id)
    let channels: [(index: Int, id: ChannelID)]
    /// STOMP: the server's heart-beats asked for, every this many ms (0: none).
    var stompHeartBeat = 0
    /// STOMP: the client's own heart-beats (an EOL), every this many ms (0: none).
    var stompClientHeartBeat = 0
}

/// Recognises the load generator's messages inside a received frame without decoding it: the
/// content `lg <run>-<n>` of a measured message, or `lgprobe <run>-<channel>` of a probe (in
/// `content` for Socket.IO and native, in `message` for STOMP's bodies).
struct DeliveryMarkers: Sendable {
    let message: [UInt8]
    let probe: [UInt8]
    let stompMessage: [UInt8]
    let stompProbe: [UInt8]

    init(runId: String) {
        message = Array(#""content":"lg \#(runId)-"#.utf8)
        probe = Array(#""content":"lgprobe \#(runId)-"#.utf8)
        stompMessage = Array(#""message":"lg \#(runId)-"#.utf8)
        stompProbe = Array(#""message":"lgprobe \#(runId)-"#.utf8)
    }

    static func content(runId: String, message n: Int) -> String { "lg \(runId)-\(n)" }
    static func content(runId: String, probeOf channel: Int) -> String { "lgprobe \(runId)-\(channel)" }

    /// Records what `bytes` carries; returns false when it is none of ours.
    func record(_ bytes: UnsafeRawBufferPointer, socket: Int, at nanos: UInt64, in log: DeliveryLog, stomp: Bool = false) -> Bool {
        if let start = Bytes.end(of: stomp ? stompMessage : message, in: bytes), let n = Bytes.integer(at: start, in: bytes) {
            log.delivered(socket: socket, message: n, at: nanos)
            return true
        }
        if let start = Bytes.end(of: stomp ? stompProbe : probe, in: bytes), let c = Bytes.integer(at: start, in: bytes) {
            log.probed(socket: socket, channel: c)
            return true
        }
        return false
    }
}

/// Opens and holds the run's sockets: one task each (no thread per socket), at most
/// `handshakes` handshakes at a time. `stop()` closes them all.
final class SocketPool: Sendable {
    /// A server's WebSocket and HTTP base URLs.
    struct Server: Sendable {
        let ws: String
        let http: String

        init(_ url: String) {
            // http://host:port → ws://host:port (https → wss)
            ws = url.hasPrefix("https") ? "wss" + url.dropFirst(5) : "ws" + url.dropFirst(4)
            http = url
        }
    }

    let specs: [LoadGenSocketSpec]
    let server: Server
    /// Where the second half of the sockets connect instead (`--second-gateway`), if anywhere.
    let second: Server?
    let markers: DeliveryMarkers
    let log: DeliveryLog
    let gate: AsyncGate
    private let task = Locked<Task<Void, Never>?>(nil)

    init(specs: [LoadGenSocketSpec], gatewayURL: String, secondGatewayURL: String? = nil, markers: DeliveryMarkers, log: DeliveryLog, handshakes: Int) {
        self.specs = specs
        self.server = Server(gatewayURL)
        self.second = secondGatewayURL.map(Server.init)
        self.markers = markers
        self.log = log
        self.gate = AsyncGate(permits: handshakes)
    }

    /// Where socket `index` connects: the second gateway for the second half, if there is one.
    func server(for index: Int) -> Server {
        guard let second, index >= specs.count / 2 else { return server }
        return second
    }

    func start() {
        let t = Task {
            await withTaskGroup(of: Void.self) { group in
                for spec in specs {
                    group.addTask { await self.run(spec) }
                }
            }
        }
        task.withLock { $0 = t }
    }

    /// Waits until every socket is ready or failed, or `timeout` passes; returns (ready, failed).
    func waitForHandshakes(timeout: Duration) async -> (ready: Int, failed: Int) {
        let deadline = ContinuousClock.now + timeout
        var last = ContinuousClock.now
        while true {
            let e = log.socketEvents
            if e.ready + e.failed >= specs.count || ContinuousClock.now >= deadline { return (e.ready, e.failed) }
            if ContinuousClock.now - last >= .seconds(2) {
                say("  sockets ready \(e.ready)/\(specs.count), failed \(e.failed)")
                last = ContinuousClock.now
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    func stop() async {
        log.stopping.open()
        let t = task.withLock { $0 }
        t?.cancel()
        _ = try? await withTimeout(.seconds(20), "closing sockets") { await t?.value }
    }

    private func run(_ spec: LoadGenSocketSpec) async {
        await gate.acquire()
        let handshake = HandshakeState(gate: gate)
        let log = self.log
        let markers = self.markers
        let server = server(for: spec.index)
        let wsBase = server.ws
        let url: String
        switch spec.kind {
        case .socketio: url = wsBase + "/socket.io/?EIO=4&transport=websocket"
        case .socketioUpgrade:
            do {
                url = wsBase + "/socket.io/?EIO=4&transport=websocket&sid=" + (try await pollingSession(server.http))
            } catch {
                handshake.finish()
                return log.failed("socketio-upgrade: the polling handshake failed: \(error)", socket: spec.index, afterReady: false)
            }
        case .native: url = wsBase + "/v1/gateway"
        case .stomp: url = wsBase + "/v1/stomp"
        case .nchan: url = wsBase + "/sub/" + spec.channels.map { "\($0.id)" }.joined(separator: ",")
        }
        guard let target = LoadGenConnection.Target(url: url) else {
            handshake.finish()
            return log.failed("\(spec.kind.rawValue): the load generator speaks ws:// only, not \(url)", socket: spec.index, afterReady: false)
        }
        let outcome = LoadGenConnection.Outcome()
        do {
            let channel = try await LoadGenConnection.open(
                target, conversation: { LoadGenConversation(spec: spec, markers: markers, log: log, handshake: handshake) }, outcome: outcome)
            // The conversation runs on the channel's loop; this task only waits for its end.
            try? await withTaskCancellationHandler {
                try await channel.closeFuture.get()
            } onCancel: {
                channel.pipeline.fireUserInboundEventTriggered(LoadGenConnection.Stop())
            }
            if let error = outcome.error { throw error }
            let close = outcome.serverClose
            let detail = close.map { c in " (\(c.code.map { String($0) } ?? "no code")\(c.reason.map { " \($0)" } ?? ""))" } ?? ""
            if !handshake.isDone {
                handshake.finish()
                log.failed(
                    "\(spec.kind.rawValue): \(close == nil ? "closed before the handshake completed" : "closed\(detail)")", socket: spec.index,
                    afterReady: false)
            } else {
                log.failed("\(spec.kind.rawValue): closed by the server\(detail)", socket: spec.index, afterReady: true)
            }
        } catch {
            let wasReady = handshake.wasReady
            handshake.finish()
            log.failed(Self.describe(error, kind: spec.kind), socket: spec.index, afterReady: wasReady)
        }
    }

    /// A new polling session's id (`0{"sid":"…",…}` answers the handshake).
    private func pollingSession(_ httpBase: String) async throws -> String {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: httpBase + "/socket.io/?EIO=4&transport=polling"), timeout: .seconds(30))
        let body = String(buffer: try await response.body.collect(upTo: 1 << 16))
        guard response.status == .ok, body.hasPrefix(#"0{"sid":""#) else {
            throw LoadGenProtocolError("HTTP \(response.status.code) \(body.prefix(120))")
        }
        return String(body.dropFirst(#"0{"sid":""#.count).prefix { $0 != "\"" })
    }

    static func describe(_ error: any Error, kind: LoadGenSocketSpec.Kind) -> String {
        if error is LoadGenConnection.UpgradeRefused {
            switch kind {
            case .native: return "native: the gateway refused the WebSocket upgrade of /v1/gateway (no native server in this gateway?)"
            case .socketio: return "socketio: the gateway refused the WebSocket upgrade of /socket.io/"
            case .socketioUpgrade: return "socketio-upgrade: the gateway refused the upgrade of the polling session"
            case .stomp: return "stomp: the gateway refused the WebSocket upgrade of /v1/stomp (no STOMP server in this gateway?)"
            case .nchan: return "nchan: nginx refused the WebSocket upgrade of /sub/…"
            }
        }
        if error is CancellationError { return "\(kind.rawValue): cancelled" }
        return "\(kind.rawValue): \(error)"
    }
}

/// The handshake of one socket: releases its handshake permit exactly once (ready or failed).
final class HandshakeState: Sendable {
    private let state = Locked<(done: Bool, ready: Bool)>((false, false))
    private let gate: AsyncGate

    init(gate: AsyncGate) { self.gate = gate }

    var isDone: Bool { state.value.done }
    var wasReady: Bool { state.value.ready }

    /// Returns true the first time.
    @discardableResult
    func finish(ready: Bool = false) -> Bool {
        let first = state.withLock { s -> Bool in
            guard !s.done else { return false }
            s = (true, ready)
            return true
        }
        if first { gate.release() }
        return first
    }
}
