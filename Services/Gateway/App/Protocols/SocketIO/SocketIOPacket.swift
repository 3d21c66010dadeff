import NIOCore

/// Socket.IO packets carried in Engine.IO `message` packets: protocol v5 for Engine.IO v4
/// clients (Socket.IO 3/4) and protocol v4 for Engine.IO v3 clients (Socket.IO 2).
///
/// Text form: `<type>[<attachments>-][/<namespace>,][<ack id>][<json>]`. Only what the gateway
/// needs is decoded: the type, the namespace, and the JSON data as text.
enum SocketIOPacketType: UInt8, Sendable {
    case connect = 0, disconnect, event, ack, connectError, binaryEvent, binaryAck
}

struct SocketIOPacket: Sendable, Equatable {
    var type: SocketIOPacketType
    var namespace: String
    /// The JSON data as sent (empty when absent).
    var data: Substring

    /// Parses a packet; nil when malformed.
    init?(_ text: Substring) {
        guard let type = leadingDigit(text).flatMap(SocketIOPacketType.init(rawValue:)) else { return nil }
        self.type = type
        var rest = text.dropFirst()
        if type == .binaryEvent || type == .binaryAck {
            // `<attachments>-`: the attachments themselves would follow as binary packets.
            guard let dash = rest.firstIndex(of: "-"), rest[rest.startIndex..<dash].allSatisfy(\.isASCIIDigit) else { return nil }
            rest = rest[rest.index(after: dash)...]
        }
        if rest.first == "/" {
            let end = rest.firstIndex(of: ",") ?? rest.endIndex
            namespace = String(rest[rest.startIndex..<end])
            guard namespace.utf8.count <= 256 else { return nil }
            rest = end == rest.endIndex ? rest[end...] : rest[rest.index(after: end)...]
        } else {
            namespace = "/"
        }
        rest = rest.drop(while: \.isASCIIDigit)  // an ack id: the gateway never acknowledges
        data = rest
    }

    /// The first string argument of an EVENT whose name is `name` (`["name","value",…]`).
    func stringArgument(ofEvent name: String) -> String? {
        guard type == .event, let array = JSONText.parseStrings(data), array.first == name, array.count >= 2 else { return nil }
        return array[1]
    }

    /// The `token` member of a CONNECT payload (`{"token":"…"}`), if any.
    var connectToken: String? {
        guard type == .connect, !data.isEmpty else { return nil }
        return JSONText.stringMember("token", in: data)
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

/// Encodes the packets the gateway sends, already wrapped in an Engine.IO `message` packet.
enum SocketIOEncoder {
    /// CONNECT acknowledgement: v5 carries the namespace socket's id, v4 nothing.
    static func connected(_ namespace: String, socketId: String, version: EngineIOVersion) -> String {
        switch version {
        case .v4: return "40" + prefix(namespace) + #"{"sid":"\#(socketId)"}"#
        case .v3: return "40" + prefix(namespace)
        }
    }

    /// CONNECT_ERROR (v5: `{"message":…}`) or ERROR (v4: a JSON string).
    static func connectError(_ namespace: String, message: String, version: EngineIOVersion) -> String {
        switch version {
        case .v4: return "44" + prefix(namespace) + #"{"message":\#(JSONText.quoted(message))}"#
        case .v3: return "44" + prefix(namespace) + JSONText.quoted(message)
        }
    }

    static func disconnect(_ namespace: String) -> String {
        "41" + prefix(namespace)
    }

    /// EVENT `[event, <json object>]` to a namespace (identical text in v4 and v5), as the
    /// WebSocket frame of an Engine.IO message around an encoded payload: the packet's head is
    /// written straight into the frame's buffer and `json`'s bytes follow it, so no `String` is
    /// built for the packet (building one took a copy of the payload per append, about ten
    /// allocations per message: docs/benchmarks.md, part 46).
    static func eventFrame(_ namespace: String, name: String, json: ByteBuffer) -> OutboundText {
        let quotedName = JSONText.quoted(name)
        let open: StaticString = "42"
        let headBytes = open.utf8CodeUnitCount + (namespace == "/" ? 0 : namespace.utf8.count + 1) + 1 + quotedName.utf8.count + 1
        return OutboundText(
            headBytes: headBytes,
            writeHead: { buffer in
                buffer.writeStaticString(open)
                if namespace != "/" {
                    buffer.writeString(namespace)
                    buffer.writeStaticString(",")
                }
                buffer.writeStaticString("[")
                buffer.writeString(quotedName)
                buffer.writeStaticString(",")
            }, shared: json, tail: "]")
    }

    private static func prefix(_ namespace: String) -> String {
        namespace == "/" ? "" : namespace + ","
    }
}
