import Foundation
import NIOCore
import Testing

@testable import GatewayApp

/// The Engine.IO and Socket.IO codecs on their own: framings, packet forms, malformed input.
@Suite("Engine.IO and Socket.IO codecs")
struct ProtocolCodecTests {
    @Test("v4 payloads: record-separated, empty parts refused")
    func payloadV4() {
        #expect(EngineIOPayload.encode(["0{}", "40", "6"], version: .v4) == "0{}\u{1E}40\u{1E}6")
        #expect(EngineIOPayload.decode(Array("42[\"a\"]\u{1E}3".utf8), version: .v4) == ["42[\"a\"]", "3"])
        #expect(EngineIOPayload.decode(Array("4\u{1E}".utf8), version: .v4) == nil)
        #expect(EngineIOPayload.decode([], version: .v4) == nil)
        #expect(EngineIOPayload.decode([0xFF, 0xFE], version: .v4) == nil)
    }

    @Test("v3 payloads: text `<length>:` in UTF-16 units, the XHR2 binary form, malformed lengths refused")
    func payloadV3() {
        #expect(EngineIOPayload.encode(["40", "42[\"안녕😀\"]"], version: .v3) == "2:4010:42[\"안녕😀\"]")
        #expect(EngineIOPayload.decode(Array("2:4010:42[\"안녕😀\"]".utf8), version: .v3) == ["40", "42[\"안녕😀\"]"])
        #expect(EngineIOPayload.decode([0, 2, 0xFF] + Array("40".utf8) + [0, 1, 0xFF] + Array("2".utf8), version: .v3) == ["40", "2"])
        for bad in ["5:40", "x:40", ":40", "0:", "2:40junk", "99999999999999999999:4"] {
            #expect(EngineIOPayload.decode(Array(bad.utf8), version: .v3) == nil, "\(bad)")
        }
        #expect(EngineIOPayload.decode([0, 9, 0xFF, 0x34], version: .v3) == nil)
        #expect(EngineIOPayload.decode([1, 1, 0xFF, 0x34], version: .v3) == nil)
        #expect(EngineIOPayload.decode([0, 12, 0xFF, 0x34], version: .v3) == nil)
    }

    @Test("Engine.IO packets")
    func enginePackets() {
        #expect(EngineIOPacket("2probe") == EngineIOPacket(.ping, "probe"))
        #expect(EngineIOPacket("6") == EngineIOPacket(.noop))
        #expect(EngineIOPacket("7") == nil)
        #expect(EngineIOPacket("") == nil)
        #expect(EngineIOPacket("x") == nil)
        #expect(EngineIOPacket.encode(.pong, "probe") == "3probe")
    }

    @Test("Socket.IO packets: namespaces with and without comma, auth tokens, events, malformed")
    func socketIOPackets() throws {
        let v5 = try #require(SocketIOPacket(#"0/ws-channel-1,{"token":"t"}"#))
        #expect(v5.type == .connect && v5.namespace == "/ws-channel-1" && v5.connectToken == "t")
        let v4 = try #require(SocketIOPacket("0/ws-dm-2"))
        #expect(v4.namespace == "/ws-dm-2" && v4.data.isEmpty && v4.connectToken == nil)
        #expect(SocketIOPacket("0")?.namespace == "/")
        #expect(SocketIOPacket(#"2["changesocketid","u1"]"#)?.stringArgument(ofEvent: "changesocketid") == "u1")
        #expect(SocketIOPacket(#"212["changesocketid","u1"]"#)?.stringArgument(ofEvent: "changesocketid") == "u1")
        #expect(SocketIOPacket(#"2["changesocketid",5]"#)?.stringArgument(ofEvent: "changesocketid") == nil)
        #expect(SocketIOPacket(#"2["other","u1"]"#)?.stringArgument(ofEvent: "changesocketid") == nil)
        #expect(SocketIOPacket(#"2[broken"#)?.stringArgument(ofEvent: "changesocketid") == nil)
        #expect(SocketIOPacket("51-/a,[]")?.type == .binaryEvent)
        #expect(SocketIOPacket("5x-[]") == nil)
        #expect(SocketIOPacket("9") == nil)
        #expect(SocketIOPacket("") == nil)
        #expect(SocketIOPacket("0/" + String(repeating: "a", count: 300)) == nil)
    }

    @Test("encoded server packets per protocol version")
    func serverPackets() {
        #expect(SocketIOEncoder.connected("/ws-dm-1", socketId: "S", version: .v4) == #"40/ws-dm-1,{"sid":"S"}"#)
        #expect(SocketIOEncoder.connected("/", socketId: "S", version: .v3) == "40")
        #expect(SocketIOEncoder.connectError("/x", message: "Invalid namespace", version: .v4) == #"44/x,{"message":"Invalid namespace"}"#)
        #expect(SocketIOEncoder.connectError("/x", message: "Invalid namespace", version: .v3) == #"44/x,"Invalid namespace""#)
        #expect(JSONText.quoted("a\"\\\n\u{1}") == #""a\"\\\n\u0001""#)
    }

    @Test("an event written into its frame is the frame of the packet's text, small or sharing its payload")
    func eventFrames() {
        let large = "{\"x\":\"" + String(repeating: "y", count: OutboundText.sharingThreshold) + "\"}"
        let cases = [
            ("/ws-channel-1", "channel", #"{"a":"안녕"}"#, #"42/ws-channel-1,["channel",{"a":"안녕"}]"#),
            ("/", "chat", "{}", #"42["chat",{}]"#),
            ("/ws-dm-2", "a\"b", large, #"42/ws-dm-2,["a\"b","# + large + "]"),
        ]
        for (namespace, name, json, text) in cases {
            let frame = SocketIOEncoder.eventFrame(namespace, name: name, json: ByteBuffer(string: json))
            let expected = OutboundText(text)
            #expect(frame.text == expected.text)
            #expect(frame.byteCount == expected.byteCount && frame.wireBytes == expected.wireBytes)
            // The frame's header names the whole packet's length; a large payload is shared, not copied.
            #expect(
                frame.frameHead.getBytes(at: frame.frameHead.readerIndex, length: 4)
                    == expected.frameHead.getBytes(at: expected.frameHead.readerIndex, length: 4))
            #expect((frame.shared != nil) == (json.utf8.count >= OutboundText.sharingThreshold))
        }
    }

    @Test("conversation namespaces and the recent-id memory")
    func namespacesAndDedupe() {
        let id = UUID()
        #expect(ConversationNamespace("/ws-channel-\(id.uuidString)") == .channel(id))
        #expect(ConversationNamespace("/ws-dm-\(id.uuidString.lowercased())")?.name == "/ws-dm-\(id.uuidString.lowercased())")
        #expect(ConversationNamespace("/ws-channel-") == nil && ConversationNamespace("/chat") == nil)
        var recent = RecentIds(capacity: 2)
        let (a, b, c) = (UUID(), UUID(), UUID())
        let inserted = [recent.insert(a), recent.insert(a), recent.insert(b), recent.insert(c), recent.insert(a), recent.insert(c)]
        // a is forgotten once two newer ids arrived; c is still remembered.
        #expect(inserted == [true, false, true, true, true, false])
    }
}
