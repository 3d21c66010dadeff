import Common
import Foundation
import NIOCore

/// The native protocol's client side (docs/native-gateway.md): hello → identify {token} →
/// dispatch `ready` with s = 1; a heartbeat `{seq}` every `heartbeat_interval`; dispatches
/// `channel.message` carry the `ChannelChat`. Sequence numbers must grow by exactly 1.
extension LoadGenConversation {
    private static let channelMessage = Array(#""t":"channel.message""#.utf8)
    private static let sequenceKey = Array(#""s":"#.utf8)
    /// How the gateway begins every dispatch (`NativeFrames.dispatch`): then the type, then `s`.
    private static let dispatchHead = Array(#"{"op":"dispatch","t":""#.utf8)
    private static let typeToSequence = Array(#"","s":"#.utf8)
    private static let ready = Array("ready".utf8)

    /// The heartbeat frame: native, naming the last sequence seen; STOMP's, an EOL.
    var heartbeatFrame: String {
        spec.kind == .stomp ? "\n" : #"{"op":"heartbeat","d":{"seq":\#(lastSequence.map(String.init) ?? "null")}}"#
    }

    func nativeReceived(_ message: ByteBuffer, at now: UInt64) throws -> [Action] {
        if stage == 0 {
            guard let hello = jsonObject(message), hello["op"] as? String == "hello",
                let interval = ((hello["d"] as? [String: Any])?["heartbeat_interval"] as? NSNumber)?.intValue, interval > 0
            else { throw LoadGenProtocolError("native: expected hello with heartbeat_interval, got \(String(buffer: message).prefix(120))") }
            stage = 1
            return [.send(#"{"op":"identify","d":{"token":"\#(spec.token)"}}"#), .heartbeat(every: interval)]
        }
        // Fast path: a channel message is recognised and recorded without JSON decoding.
        let fast = message.withUnsafeReadableBytes { bytes -> Bool in
            guard Bytes.end(of: Self.channelMessage, in: bytes) != nil else { return false }
            if let at = Bytes.end(of: Self.sequenceKey, in: bytes), let s = Bytes.integer(at: at, in: bytes) { advance(to: s) }
            recordMessage(bytes, at: now)
            return true
        }
        if fast { return [] }
        // Any other dispatch but `ready` (a presence batch: up to 500 updates, thousands of them
        // while 5 000 sockets open) only moves the sequence: read from the frame's head, whose
        // layout the gateway fixes, without decoding the JSON.
        if let s = message.withUnsafeReadableBytes({ Self.dispatchSequence(in: $0) }) {
            advance(to: s)
            return []
        }
        guard let object = jsonObject(message), let op = object["op"] as? String else {
            throw LoadGenProtocolError("native: undecodable frame \(String(buffer: message).prefix(120))")
        }
        switch op {
        case "dispatch":
            if let s = (object["s"] as? NSNumber)?.intValue { advance(to: s) }
            if object["t"] as? String == "ready" {
                guard (object["s"] as? NSNumber)?.intValue == 1 else { throw LoadGenProtocolError("native: ready with s ≠ 1") }
                ready()
            }
        case "error":
            throw LoadGenProtocolError("native: error frame \(String(buffer: message).prefix(200))")
        default:
            break  // heartbeat_ack, …
        }
        return []
    }

    /// The `s` of a dispatch other than `ready`, from `{"op":"dispatch","t":"TYPE","s":N`; nil for
    /// any other frame (it is decoded as JSON).
    static func dispatchSequence(in bytes: UnsafeRawBufferPointer) -> Int? {
        let head = dispatchHead.count
        guard bytes.count > head, bytes[..<head].elementsEqual(dispatchHead), let typeEnd = bytes[head...].firstIndex(of: UInt8(ascii: "\""))
        else { return nil }
        let sequenceAt = typeEnd + typeToSequence.count
        guard !bytes[head..<typeEnd].elementsEqual(ready), bytes.count >= sequenceAt, bytes[typeEnd..<sequenceAt].elementsEqual(typeToSequence)
        else { return nil }
        return Bytes.integer(at: sequenceAt, in: bytes)
    }

    private func advance(to s: Int) {
        let gap = lastSequence.map { s != $0 + 1 } ?? (s != 1)
        lastSequence = s
        if gap { log.sequenceGap() }
    }
}
