import Common
import Foundation
import HummingbirdWSClient
import LoadGen
import Logging
import NIOCore
import NIOWebSocket
import Synchronization

/// A native `/v1/gateway` client as a well-behaved app writes it: identify once, resume after
/// every dropped connection with the last sequence number it saw, identify anew only when the
/// session cannot be resumed (4006/4007), and then fetch what it missed over REST (counted apart:
/// `refetched`). Records every message id it receives live, duplicates and sequence gaps.
final class DrillNativeSocket: Sendable {
    struct State: Sendable {
        var sessionId: String?
        var seq = 0
        var live: [String] = []
        var duplicates = 0
        var gaps = 0
        var resumes = 0
        var reidentified = 0
        var connections = 0
        /// When the socket last re-identified (messages before it are fetched over REST).
        var needsRefetch = false
    }

    let index: Int
    let gateway: String
    let state = Mutex(State())

    init(index: Int, gateway: String) {
        self.index = index
        self.gateway = gateway
    }

    /// Connects and reconnects until cancelled.
    func run(token: @escaping @Sendable () -> String) async {
        var logger = Logger(label: "drill.native")
        logger.logLevel = .critical
        while !Task.isCancelled {
            state.withLock { $0.connections += 1 }
            let client = WebSocketClient(url: gateway + "/v1/gateway", configuration: .init(maxFrameSize: 1 << 22), logger: logger) { inbound, outbound, _ in
                try await self.session(inbound: inbound, outbound: outbound, token: token())
            }
            let close = try? await client.run()
            if let code = close?.closeCode, code == .init(codeNumber: 4006) || code == .init(codeNumber: 4007) {
                state.withLock { state in
                    state.sessionId = nil
                    state.needsRefetch = true
                    state.reidentified += 1
                }
            }
            try? await Task.sleep(for: .milliseconds(250))
        }
    }

    private func session(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, token: String) async throws {
        var frames = WebSocketMessageReader(inbound)
        guard let hello = try await frames.next().flatMap(jsonObject),
            let interval = ((hello["d"] as? [String: Any])?["heartbeat_interval"] as? NSNumber)?.intValue
        else { return }
        let (sessionId, seq) = state.withLock { ($0.sessionId, $0.seq) }
        if let sessionId {
            state.withLock { $0.resumes += 1 }
            try await outbound.write(.text(#"{"op":"resume","d":{"token":"\#(token)","session_id":"\#(sessionId)","seq":\#(seq)}}"#))
        } else {
            try await outbound.write(.text(#"{"op":"identify","d":{"token":"\#(token)"}}"#))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                while true {
                    try await Task.sleep(for: .milliseconds(interval))
                    let seq = self.state.withLock { $0.seq }
                    try await outbound.write(.text(#"{"op":"heartbeat","d":{"seq":\#(seq)}}"#))
                }
            }
            defer { group.cancelAll() }
            while let frame = try await frames.next() {
                guard let object = jsonObject(frame), object["op"] as? String == "dispatch",
                    let s = (object["s"] as? NSNumber)?.intValue
                else { continue }
                let type = object["t"] as? String
                let data = object["d"] as? [String: Any]
                state.withLock { state in
                    if type == "ready" {
                        state.sessionId = data?["session_id"] as? String
                        state.seq = s
                        return
                    }
                    if s != state.seq + 1 { state.gaps += 1 }
                    state.seq = s
                    if type == "channel.message", let id = data?["chat_id"] as? String {
                        if state.live.contains(id) { state.duplicates += 1 } else { state.live.append(id) }
                    }
                }
            }
        }
    }
}
