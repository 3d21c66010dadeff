import Events
import Foundation
import NIOCore

/// The frames of the native protocol (docs/native-gateway.md): written by hand around payloads
/// that are already JSON (a message is encoded once and spliced into every session's dispatch);
/// client frames are small and decoded with `EventJSONDecoder` (every client heartbeats once a
/// `heartbeat_interval`; Foundation's `JSONDecoder` took twice its time).
enum NativeFrames {
    static func hello(heartbeatMilliseconds: Int64) -> String {
        #"{"op":"hello","d":{"heartbeat_interval":\#(heartbeatMilliseconds)}}"#
    }

    static func dispatch(type: String, seq: Int, json: String) -> String {
        #"{"op":"dispatch","t":"\#(type)","s":\#(seq),"d":\#(json)}"#
    }

    /// A dispatch around an already-encoded payload that other sessions share. Made once per
    /// session per event (the sequence number is the session's), so its head is written straight
    /// into the frame's buffer: no interpolated `String` per delivery.
    static func dispatch(type: String, seq: Int, json: ByteBuffer) -> OutboundText {
        let open: StaticString = #"{"op":"dispatch","t":""#
        let sequence: StaticString = #"","s":"#
        let payload: StaticString = #","d":"#
        let headBytes = open.utf8CodeUnitCount + type.utf8.count + sequence.utf8CodeUnitCount + ByteBuffer.decimalBytes(seq) + payload.utf8CodeUnitCount
        return OutboundText(
            headBytes: headBytes,
            writeHead: { buffer in
                buffer.writeStaticString(open)
                buffer.writeString(type)
                buffer.writeStaticString(sequence)
                buffer.writeDecimal(seq)
                buffer.writeStaticString(payload)
            }, shared: json, tail: "}")
    }

    static let heartbeatAck = #"{"op":"heartbeat_ack"}"#

    /// Whether `text` is a heartbeat exactly as docs/native-gateway.md writes it:
    /// `{"op":"heartbeat","d":{"seq":N}}` with `N` a decimal of at most 18 digits (no leading zero)
    /// or `null`, or `{"op":"heartbeat","d":null}`. Every such text decodes as `Inbound` with op
    /// `heartbeat`; anything else (spaces, other members, another order) is left to the decoder.
    static func isCanonicalHeartbeat(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            let open: StaticString = #"{"op":"heartbeat","d":"#
            let sequence: StaticString = #"{"seq":"#
            guard let afterOpen = Self.after(open, in: bytes[...]) else { return false }
            if afterOpen.elementsEqual("null}".utf8) { return true }
            guard let value = Self.after(sequence, in: afterOpen), value.count > 2, value.suffix(2).elementsEqual("}}".utf8) else { return false }
            let number = value.dropLast(2)
            if number.elementsEqual("null".utf8) { return true }
            guard (1...18).contains(number.count), number.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return false }
            return number.count == 1 || number.first != UInt8(ascii: "0")
        }
    }

    /// What follows `prefix` in `bytes`; nil when `bytes` does not start with it.
    private static func after(_ prefix: StaticString, in bytes: Slice<UnsafeBufferPointer<UInt8>>) -> Slice<UnsafeBufferPointer<UInt8>>? {
        let head = UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
        guard bytes.starts(with: head) else { return nil }
        return bytes.dropFirst(head.count)
    }

    static func resumed(sessionId: String, replayed: Int) -> String {
        #"{"op":"resumed","d":{"session_id":"\#(sessionId)","replayed":\#(replayed)}}"#
    }

    static func subscribed(_ conversation: UUID) -> String {
        #"{"op":"subscribed","d":{"conversation_id":"\#(conversation.lowercased)"}}"#
    }

    static func error(code: Int, message: String) -> String {
        #"{"op":"error","d":{"code":\#(code),"message":\#(JSONText.quoted(message))}}"#
    }

    static func presence(user: String, status: String, lastSeen: Date) -> String {
        #"{"user_id":"\#(user)","status":"\#(status)","lastSeen":"\#(Timestamp.format(lastSeen))"}"#
    }

    static func typing(conversation: UUID, user: String, kind: String) -> String {
        #"{"conversation_id":"\#(conversation.lowercased)","user_id":"\#(user)","kind":"\#(kind)"}"#
    }

    /// A client frame: `op` and the members of `d` the gateway reads (others are ignored; a
    /// member of the wrong type makes the frame undecodable).
    struct Inbound: Decodable {
        struct Data: Decodable {
            var token: String?
            var session_id: String?
            var seq: Int?
            var conversation_id: String?
            /// identify: the client's name for its device (optional; presence and analytics see it).
            var device: String?
        }
        var op: String
        var d: Data?

        init?(_ text: String) {
            guard let frame = try? EventJSONDecoder().decode(Inbound.self, from: text.utf8) else { return nil }
            self = frame
        }

        func string(_ key: KeyPath<Data, String?>) -> String? { d?[keyPath: key] }
        var seq: Int? { d?.seq }
    }
}

/// WebSocket close codes of the native protocol.
enum NativeClose {
    static let unknownError: UInt16 = 4000
    static let unknownOp: UInt16 = 4001
    static let decodeError: UInt16 = 4002
    static let notIdentified: UInt16 = 4003
    static let authenticationFailed: UInt16 = 4004
    static let alreadyIdentified: UInt16 = 4005
    static let notResumable: UInt16 = 4006
    static let invalidSeq: UInt16 = 4007
    static let rateLimited: UInt16 = 4008
    static let timedOut: UInt16 = 4009
    static let notMember = 4010
    /// The client fell too far behind (its queue is over its byte bound, or a write to it timed
    /// out): resume to catch up from history.
    static let tooSlow: UInt16 = 4011
    static let goingAway: UInt16 = 1001
    static let messageTooLarge: UInt16 = 1009
}
