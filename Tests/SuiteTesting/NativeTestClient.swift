import Common
import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import NIOWebSocket
import Testing

/// A native-protocol client for tests, on hummingbird-websocket's WebSocket client: records every
/// frame it receives, sends what it is given, and can drop the connection abruptly.
public final class NativeTestClient: Sendable {
    private let received = Locked<[String]>([])
    private let closeFrame = Locked<(code: WebSocketErrorCode?, reason: String)?>(nil)
    /// Each element: one message, in as many frames as it has pieces (one: a plain text frame).
    private let outgoing: AsyncStream<[String]>.Continuation
    private let task: Task<Void, Never>

    /// - Parameter heartbeats: send heartbeats at the interval hello announces (as real clients do).
    public init(port: Int, heartbeats: Bool = true) {
        let (stream, continuation) = AsyncStream.makeStream(of: [String].self)
        outgoing = continuation
        let received = self.received
        let closeFrame = self.closeFrame
        var logger = Logger(label: "native-test-client")
        logger.logLevel = .warning
        task = Task {
            let frame = try? await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(port)/v1/gateway", configuration: .init(maxFrameSize: 1 << 20), logger: logger
            ) { inbound, outbound, _ in
                let writer = Task {
                    for await pieces in stream {
                        guard pieces.count > 1 else {
                            try await outbound.write(.text(pieces.first ?? ""))
                            continue
                        }
                        for (index, piece) in pieces.enumerated() {
                            let frame = WebSocketFrame(
                                fin: index == pieces.count - 1, opcode: index == 0 ? .text : .continuation, data: ByteBuffer(string: piece))
                            try await outbound.write(.custom(frame))
                        }
                    }
                }
                defer { writer.cancel() }
                let heart = Task {
                    guard heartbeats else { return }
                    var interval: Int?
                    while interval == nil {
                        try await Task.sleep(for: .milliseconds(10))
                        interval = received.value.lazy.compactMap { Self.helloInterval($0) }.first
                    }
                    while true {
                        try await Task.sleep(for: .milliseconds(interval ?? 1000))
                        let last = received.value.last { $0.hasPrefix(#"{"op":"dispatch""#) }.flatMap { Self.seq(of: $0) }
                        try await outbound.write(.text(#"{"op":"heartbeat","d":{"seq":\#(last.map(String.init) ?? "null")}}"#))
                    }
                }
                defer { heart.cancel() }
                for try await message in inbound.messages(maxSize: 1 << 24) {
                    if case .text(let text) = message { received.withLock { $0.append(text) } }
                }
            }
            closeFrame.withLock { $0 = frame.map { ($0.closeCode, $0.reason ?? "") } ?? (nil, "no close frame") }
        }
    }

    public func send(_ json: String) { outgoing.yield([json]) }

    /// Sends one text message as a text frame and continuation frames, one per piece.
    public func sendFragments(_ pieces: [String]) { outgoing.yield(pieces) }

    private static func helloInterval(_ text: String) -> Int? {
        guard let frame = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any], frame["op"] as? String == "hello" else { return nil }
        return (frame["d"] as? [String: Any])?["heartbeat_interval"] as? Int
    }

    private static func seq(of text: String) -> Int? {
        ((try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any])?["s"] as? Int
    }

    public func identify(_ token: String) { send(#"{"op":"identify","d":{"token":"\#(token)"}}"#) }

    public func resume(_ token: String, session: String, seq: Int) {
        send(#"{"op":"resume","d":{"token":"\#(token)","session_id":"\#(session)","seq":\#(seq)}}"#)
    }

    /// Drops the connection without a close handshake (the task is cancelled).
    public func kill() async {
        outgoing.finish()
        task.cancel()
        await task.value
    }

    /// The frames received so far, parsed.
    public var frames: [[String: Any]] {
        received.value.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    public func dispatches(_ type: String) -> [(seq: Int, data: [String: Any])] {
        frames.filter { $0["op"] as? String == "dispatch" && $0["t"] as? String == type }
            .compactMap { frame in (frame["s"] as? Int).flatMap { seq in (frame["d"] as? [String: Any]).map { (seq, $0) } } }
    }

    /// Every dispatch's sequence number, in arrival order.
    public var sequence: [Int] { frames.filter { $0["op"] as? String == "dispatch" }.compactMap { $0["s"] as? Int } }

    public var lastSeq: Int { sequence.last ?? 0 }

    @discardableResult
    public func waitFor(_ what: String = "frame", timeout: Duration = .seconds(20), _ predicate: @escaping @Sendable ([[String: Any]]) -> Bool) async throws
        -> [[String: Any]]
    {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let frames = self.frames
            if predicate(frames) { return frames }
            try await Task.sleep(for: .milliseconds(20))
        }
        // The server's close frame, if it refused (a resume it could not take: 4xxx and a reason).
        let close = closeFrame.value.map { "closed by the server: \(String(describing: $0.code)) \($0.reason)" } ?? "not closed"
        Issue.record("timed out waiting for \(what); \(close); received: \(received.value.suffix(10))")
        throw TimedOut()
    }

    public func waitForOp(_ op: String, timeout: Duration = .seconds(20)) async throws -> [String: Any] {
        let frames = try await waitFor("op \(op)", timeout: timeout) { $0.contains { $0["op"] as? String == op } }
        return frames.last { $0["op"] as? String == op }?["d"] as? [String: Any] ?? [:]
    }

    /// The close code and reason the server sent, once the connection ended.
    public func closed(timeout: Duration = .seconds(20)) async throws -> (code: WebSocketErrorCode?, reason: String) {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let frame = closeFrame.value { return frame }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TimedOut()
    }

    public struct TimedOut: Error {}

    /// A client that identified as `user` on the gateway at `port`, and its ready payload.
    public static func connect(_ port: Int, _ user: User, heartbeats: Bool = true) async throws -> (NativeTestClient, [String: Any]) {
        let client = NativeTestClient(port: port, heartbeats: heartbeats)
        let hello = try await client.waitForOp("hello")
        #expect(hello["heartbeat_interval"] as? Int != nil)
        client.identify(user.token)
        try await client.waitFor("ready") { $0.contains { $0["t"] as? String == "ready" } }
        return (client, try #require(client.dispatches("ready").first).data)
    }
}
