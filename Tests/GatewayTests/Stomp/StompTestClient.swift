import Common
import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import NIOWebSocket
import Testing

@testable import GatewayApp

/// A raw STOMP-over-WebSocket client on hummingbird-websocket's client: sends the text it is
/// given (well-formed or not), parses what arrives with the gateway's own parser, and records
/// heart-beats and the close frame.
final class StompTestClient: Sendable {
    private let frames = Locked<[StompFrame]>([])
    private let heartbeats = Locked(0)
    private let closeFrame = Locked<(code: WebSocketErrorCode?, reason: String)?>(nil)
    private let outgoing: AsyncStream<String>.Continuation
    private let task: Task<Void, Never>

    init(port: Int, path: String = "/my-chat/websocket") {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        outgoing = continuation
        let (frames, heartbeats, closeFrame) = (self.frames, self.heartbeats, self.closeFrame)
        var logger = Logger(label: "stomp-test-client")
        logger.logLevel = .warning
        task = Task {
            let frame = try? await WebSocketClient.connect(url: "ws://127.0.0.1:\(port)\(path)", logger: logger) { inbound, outbound, _ in
                let writer = Task {
                    for await text in stream { try await outbound.write(.text(text)) }
                }
                defer { writer.cancel() }
                var parser = StompParser(maxFrameBytes: 1 << 22)
                for try await message in inbound.messages(maxSize: 1 << 22) {
                    guard case .text(let text) = message else { continue }
                    parser.append(text.utf8)
                    while let result = try? parser.next() {
                        switch result {
                        case .heartbeat: heartbeats.withLock { $0 += 1 }
                        case .frame(let frame): frames.withLock { $0.append(frame) }
                        }
                    }
                }
            }
            closeFrame.withLock { $0 = frame.map { ($0.closeCode, $0.reason ?? "") } ?? (nil, "no close frame") }
        }
    }

    func send(_ text: String) { outgoing.yield(text) }

    func send(_ frame: StompFrame) { outgoing.yield(String(decoding: frame.encoded(), as: UTF8.self)) }

    func connect(token: String, userId: String? = nil, heartBeat: String = "0,0") {
        var headers: StompHeaders = ["accept-version": "1.2", "host": "chatsuite", "access-token": token, "heart-beat": heartBeat]
        if let userId { headers.append("user-id", userId) }
        send(StompFrame(command: .connect, headers: headers))
    }

    /// A client connected (CONNECTED received) with `token`, naming `userId` when given.
    static func connected(port: Int, token: String, userId: String? = nil) async throws -> StompTestClient {
        let client = StompTestClient(port: port)
        client.connect(token: token, userId: userId)
        _ = try await client.waitFor(.connected)
        return client
    }

    /// SUBSCRIBE to `destination` as subscription `id`, waiting for its own RECEIPT.
    func subscribe(_ destination: String, id: String) async throws {
        send("SUBSCRIBE\nid:\(id)\ndestination:\(destination)\nreceipt:\(id)\n\n\0")
        try await waitFor("the receipt of \(destination)") { frames in frames.contains { $0.command == .receipt && $0.headers["receipt-id"] == id } }
    }

    /// SEND a JSON body to `destination`.
    func send(to destination: String, _ json: String) {
        send("SEND\ndestination:\(destination)\ncontent-type:application/json\n\n\(json)\0")
    }

    var received: [StompFrame] { frames.value }
    var heartbeatCount: Int { heartbeats.value }

    /// The MESSAGE bodies received, parsed.
    var messages: [[String: Any]] {
        received.filter { $0.command == .message }.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.body))) as? [String: Any] }
    }

    @discardableResult
    func waitFor(_ what: String, timeout: Duration = .seconds(20), _ predicate: @escaping @Sendable ([StompFrame]) -> Bool) async throws -> [StompFrame] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let frames = received
            if predicate(frames) { return frames }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record(
            "timed out waiting for \(what); received: \(received.suffix(5).map { "\($0.command.rawValue) \($0.headers.entries) \($0.bodyString ?? "")" })")
        throw TimedOut()
    }

    /// The first frame of `command`.
    func waitFor(_ command: StompCommand, timeout: Duration = .seconds(20)) async throws -> StompFrame {
        let frames = try await waitFor(command.rawValue, timeout: timeout) { $0.contains { $0.command == command } }
        return try #require(frames.first { $0.command == command })
    }

    /// The close code and reason the server sent, once the connection ended.
    func closed(timeout: Duration = .seconds(20)) async throws -> (code: WebSocketErrorCode?, reason: String) {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let frame = closeFrame.value { return frame }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TimedOut()
    }

    func stop() async {
        outgoing.finish()
        task.cancel()
        await task.value
    }

    struct TimedOut: Error {}
}
