/// Engine.IO packets and the HTTP long-polling payload framings of protocol v3 and v4.
///
/// Only text packets are spoken: the suite never emits binary, and a client's binary packet is
/// ignored. A packet is kept as its encoded string (`<type digit><data>`), so one encoded
/// Socket.IO broadcast is shared, not copied, by every session it is queued on.
enum EngineIOVersion: Int, Sendable {
    case v3 = 3
    case v4 = 4

    init?(query value: String?) {
        switch value {
        case "3": self = .v3
        case "4": self = .v4
        default: return nil
        }
    }
}

/// The value of a packet's leading type digit.
func leadingDigit(_ text: Substring) -> UInt8? {
    guard let first = text.utf8.first, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") else { return nil }
    return first - UInt8(ascii: "0")
}

enum EngineIOPacketType: UInt8, Sendable {
    case open = 0, close, ping, pong, message, upgrade, noop

    var digit: Character { Character(Unicode.Scalar(UInt8(ascii: "0") + rawValue)) }
}

struct EngineIOPacket: Sendable, Equatable {
    var type: EngineIOPacketType
    var data: Substring

    /// Parses one text packet; nil for an empty or unknown one.
    init?(_ text: Substring) {
        guard let type = leadingDigit(text).flatMap(EngineIOPacketType.init(rawValue:)) else { return nil }
        self.type = type
        self.data = text.dropFirst()
    }

    init(_ type: EngineIOPacketType, _ data: Substring = "") {
        self.type = type
        self.data = data
    }

    static func encode(_ type: EngineIOPacketType, _ data: String = "") -> String {
        String(type.digit) + data
    }
}

/// Engine.IO errors answered to HTTP requests, with the reference server's codes and messages.
enum EngineIOError: Error, Sendable {
    case unknownTransport, unknownSession, badHandshakeMethod, badRequest, forbidden, unsupportedVersion
    /// The address opened too many sessions (the gateway's own; answered with HTTP 429).
    case tooManyRequests

    var code: Int {
        switch self {
        case .unknownTransport: 0
        case .unknownSession: 1
        case .badHandshakeMethod: 2
        case .badRequest, .tooManyRequests: 3
        case .forbidden: 4
        case .unsupportedVersion: 5
        }
    }

    var message: String {
        switch self {
        case .unknownTransport: "Transport unknown"
        case .unknownSession: "Session ID unknown"
        case .badHandshakeMethod: "Bad handshake method"
        case .badRequest: "Bad request"
        case .forbidden: "Forbidden"
        case .unsupportedVersion: "Unsupported protocol version"
        case .tooManyRequests: "Too many requests"
        }
    }
}

/// The polling payload framings. v4: packets separated by the record separator 0x1E. v3: each
/// packet as `<length>:<packet>` (length in UTF-16 code units, as JavaScript counts) from the
/// server; clients may also post the XHR2 binary form (`0x00|0x01`, decimal digits as bytes,
/// `0xFF`, packet), which python-engineio 3 does.
enum EngineIOPayload {
    static let recordSeparator: UInt8 = 0x1E

    static func encode(_ packets: [String], version: EngineIOVersion) -> String {
        switch version {
        case .v4:
            return packets.joined(separator: "\u{1E}")
        case .v3:
            var out = ""
            for packet in packets {
                out += String(packet.utf16.count)
                out += ":"
                out += packet
            }
            return out
        }
    }

    /// Decodes a posted payload; nil when it is malformed (a protocol error, answered with 400).
    static func decode(_ bytes: [UInt8], version: EngineIOVersion) -> [String]? {
        guard !bytes.isEmpty else { return nil }
        switch version {
        case .v4:
            var packets: [String] = []
            for part in bytes.split(separator: recordSeparator, omittingEmptySubsequences: false) {
                guard !part.isEmpty, let text = String(validating: part, as: UTF8.self) else { return nil }
                packets.append(text)
            }
            return packets
        case .v3:
            return bytes[0] <= 1 ? decodeBinaryV3(bytes) : decodeTextV3(bytes)
        }
    }

    private static func decodeTextV3(_ bytes: [UInt8]) -> [String]? {
        guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
        var packets: [String] = []
        var rest = text.utf16[...]
        while !rest.isEmpty {
            guard let colon = rest.firstIndex(of: UInt16(UInt8(ascii: ":"))),
                let length = Int(String(decoding: rest[rest.startIndex..<colon], as: UTF16.self)), length > 0, length <= 1 << 24
            else {
                return nil
            }
            let start = rest.index(after: colon)
            guard let end = rest.index(start, offsetBy: length, limitedBy: rest.endIndex) else { return nil }
            packets.append(String(decoding: rest[start..<end], as: UTF16.self))
            rest = rest[end...]
        }
        return packets
    }

    private static func decodeBinaryV3(_ bytes: [UInt8]) -> [String]? {
        var packets: [String] = []
        var index = 0
        while index < bytes.count {
            guard bytes[index] == 0 else { return nil }  // binary packets (0x01) are not spoken
            index += 1
            var length = 0
            while index < bytes.count, bytes[index] != 0xFF {
                guard bytes[index] <= 9, length < 1 << 24 else { return nil }
                length = length * 10 + Int(bytes[index])
                index += 1
            }
            guard index < bytes.count, length > 0, index + 1 + length <= bytes.count else { return nil }
            index += 1
            guard let text = String(validating: bytes[index..<index + length], as: UTF8.self) else { return nil }
            packets.append(text)
            index += length
        }
        return packets
    }
}
