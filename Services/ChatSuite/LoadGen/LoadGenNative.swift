import Common
import Foundation
import HummingbirdWSClient
import NIOCore

/// The native protocol's client side (docs/native-gateway.md): hello → identify {token} →
/// dispatch `ready` with s = 1; a heartbeat `{seq}` every `heartbeat_interval`; dispatches
/// `channel.message` carry the `ChannelChat`. Sequence numbers must grow by exactly 1.
extension LoadGenSession {
    func runNative() async throws {
        var reader = WebSocketMessageReader(inbound)
        guard let helloFrame = try await reader.next() else { throw LoadGenProtocolError("native: closed before hello") }
        guard let hello = jsonObject(helloFrame), hello["op"] as? String == "hello",
            let interval = ((hello["d"] as? [String: Any])?["heartbeat_interval"] as? NSNumber)?.intValue, interval > 0
        else { throw LoadGenProtocolError("native: expected hello with heartbeat_interval, got \(String(buffer: helloFrame).prefix(120))") }
        try await outbound.write(.text(#"{"op":"identify","d":{"token":"\#(spec.token)"}}"#))

        let lastSequence = Locked<Int?>(nil)
        let outbound = self.outbound
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // Spread the heartbeats of thousands of sockets over the interval.
                try await Task.sleep(for: .milliseconds(Int.random(in: interval / 2...interval)))
                while true {
                    let seq = lastSequence.value.map(String.init) ?? "null"
                    try await outbound.write(.text(#"{"op":"heartbeat","d":{"seq":\#(seq)}}"#))
                    try await Task.sleep(for: .milliseconds(interval))
                }
            }
            // Reading ends the session (connection closed or an error); then the heartbeats stop.
            defer { group.cancelAll() }
            while let message = try await reader.next() {
                let now = monotonicNanos()
                try handleNative(message, at: now, lastSequence: lastSequence)
            }
        }
    }

    private static let channelMessage = Array(#""t":"channel.message""#.utf8)
    private static let sequenceKey = Array(#""s":"#.utf8)

    private func handleNative(_ message: ByteBuffer, at now: UInt64, lastSequence: Locked<Int?>) throws {
        // Fast path: a channel message is recognised and recorded without JSON decoding.
        let fast = message.withUnsafeReadableBytes { bytes -> Bool in
            guard Bytes.end(of: Self.channelMessage, in: bytes) != nil else { return false }
            if let at = Bytes.end(of: Self.sequenceKey, in: bytes), let s = Bytes.integer(at: at, in: bytes) { advance(to: s, lastSequence) }
            recordMessage(bytes, at: now)
            return true
        }
        if fast { return }
        guard let object = jsonObject(message), let op = object["op"] as? String else {
            throw LoadGenProtocolError("native: undecodable frame \(String(buffer: message).prefix(120))")
        }
        switch op {
        case "dispatch":
            if let s = (object["s"] as? NSNumber)?.intValue { advance(to: s, lastSequence) }
            if object["t"] as? String == "ready" {
                guard (object["s"] as? NSNumber)?.intValue == 1 else { throw LoadGenProtocolError("native: ready with s ≠ 1") }
                ready()
            }
        case "heartbeat_ack":
            break
        case "error":
            throw LoadGenProtocolError("native: error frame \(String(buffer: message).prefix(200))")
        default:
            break
        }
    }

    private func advance(to s: Int, _ lastSequence: Locked<Int?>) {
        let gap = lastSequence.withLock { last -> Bool in
            defer { last = s }
            return last.map { s != $0 + 1 } ?? (s != 1)
        }
        if gap { log.sequenceGap() }
    }
}
