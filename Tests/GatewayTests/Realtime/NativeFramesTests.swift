import Foundation
import NIOCore
import Testing

@testable import GatewayApp

@Suite("Native frames")
struct NativeFramesTests {
    @Test("a heartbeat as the protocol writes it is recognised, and decodes as one; anything else is left to the decoder")
    func canonicalHeartbeats() {
        let canonical = [
            #"{"op":"heartbeat","d":{"seq":0}}"#, #"{"op":"heartbeat","d":{"seq":7}}"#, #"{"op":"heartbeat","d":{"seq":123456789012345678}}"#,
            #"{"op":"heartbeat","d":{"seq":null}}"#, #"{"op":"heartbeat","d":null}"#,
        ]
        for text in canonical {
            #expect(NativeFrames.isCanonicalHeartbeat(text), "\(text)")
            #expect(NativeFrames.Inbound(text)?.op == "heartbeat", "\(text)")
        }
        let others = [
            #"{"op":"heartbeat","d":{"seq":01}}"#, #"{"op":"heartbeat","d":{"seq":1234567890123456789}}"#,
            #"{"op":"heartbeat","d":{"seq":-1}}"#, #"{"op":"heartbeat","d":{"seq":"1"}}"#, #"{"op":"heartbeat","d":{"seq":}}"#,
            #"{"op":"heartbeat","d":{"seq":1}} "#, #"{"op":"heartbeat","d":{"seq":1}}}"#, #"{"op":"heartbeat","d":{"seq":1}"#,
            #"{"op":"heartbeat","d":{"seq":1,"x":2}}"#, #"{"op":"heartbeat","d":{"pad":"x"}}"#, #"{"op":"heartbeat"}"#,
            #"{ "op":"heartbeat","d":null}"#, #"{"d":null,"op":"heartbeat"}"#, #"{"op":"heartbeats","d":null}"#,
            #"{"op":"heartbeat","d":nul}"#, #"{"op":"identify","d":{"seq":1}}"#, "", "{", #"{"op":"heartbeat","d":"#,
        ]
        for text in others { #expect(!NativeFrames.isCanonicalHeartbeat(text), "\(text)") }
    }

    @Test("a dispatch is the JSON object around the shared payload, in a frame whose header gives its length, small or large")
    func dispatchFrame() throws {
        for (seq, payloadBytes) in [(1, 10), (9, 100), (10, 200), (1_234_567, 300), (Int.max, 9_000), (42, 70_000)] {
            let payload = #"{"x":""# + String(repeating: "a", count: payloadBytes) + #""}"#
            let frame = NativeFrames.dispatch(type: "channel.message", seq: seq, json: ByteBuffer(string: payload))
            let expected = #"{"op":"dispatch","t":"channel.message","s":\#(seq),"d":\#(payload)}"#
            #expect(frame.text == expected)
            #expect(frame.byteCount == expected.utf8.count)
            let object = try JSONSerialization.jsonObject(with: Data(frame.text.utf8)) as? [String: Any]
            #expect((object?["s"] as? NSNumber)?.intValue == seq)
            var header = frame.frameHead
            #expect(header.readInteger(as: UInt8.self) == 0x81)
            let length: Int? =
                switch header.readInteger(as: UInt8.self) {
                case 126: header.readInteger(as: UInt16.self).map(Int.init)
                case 127: header.readInteger(as: UInt64.self).map(Int.init)
                case let short?: Int(short)
                case nil: nil
                }
            #expect(length == expected.utf8.count)
        }
    }

    @Test("a number is written in decimal as String spells it, and takes the bytes counted for it")
    func decimals() {
        for value in [0, 1, 9, 10, 99, 100, 1_234_567, Int.max, -1, -10, Int.min] {
            var buffer = ByteBuffer()
            buffer.writeDecimal(value)
            #expect(String(buffer: buffer) == String(value))
            #expect(ByteBuffer.decimalBytes(value) == String(value).utf8.count)
        }
    }

    @Test("client frames decode as before: members read, unknown ones ignored; wrong types, nulls for op and broken JSON refused")
    func inbound() {
        let identify = NativeFrames.Inbound(#"{"op":"identify","d":{"token":"t","device":"phone","extra":[1,{"a":2}]},"x":1}"#)
        #expect(identify?.op == "identify" && identify?.string(\.token) == "t" && identify?.string(\.device) == "phone")
        #expect(NativeFrames.Inbound(#"{"op":"heartbeat","d":{"seq":17}}"#)?.seq == 17)
        #expect(NativeFrames.Inbound(#"{"op":"heartbeat","d":{"seq":null}}"#)?.seq == nil)
        #expect(NativeFrames.Inbound(#"{"op":"heartbeat"}"#)?.op == "heartbeat")
        #expect(NativeFrames.Inbound(#"{"op":"resume","d":{"seq":"17"}}"#) == nil)
        #expect(NativeFrames.Inbound(#"{"op":null}"#) == nil)
        #expect(NativeFrames.Inbound(#"{"d":{}}"#) == nil)
        #expect(NativeFrames.Inbound(#"{"op":"heartbeat""#) == nil)
        #expect(NativeFrames.Inbound(String(repeating: "[", count: 100_000)) == nil)
        #expect(NativeFrames.Inbound("") == nil)
    }
}
