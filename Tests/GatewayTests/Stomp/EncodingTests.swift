import Testing

@testable import GatewayApp

@Suite("Encoding")
struct EncodingTests {
    @Test func messageBuilderEncodesExactBytesWithContentLength() throws {
        let frame = StompFrame.message(
            destination: "/topic/group/42",
            subscription: "sub-0",
            messageId: "m-1",
            contentType: "application/json",
            body: bytes(#"{"a":1}"#)
        )
        #expect(
            frame.encodedString()
                == "MESSAGE\ndestination:/topic/group/42\nmessage-id:m-1\nsubscription:sub-0\n"
                + "content-type:application/json\ncontent-length:7\n\n{\"a\":1}\0"
        )
    }

    @Test func connectedBuilderEncodesVersionHeartBeatServerAndSession() {
        let frame = StompFrame.connected(
            version: .v1_2,
            heartBeat: StompHeartBeat(sendInterval: 10_000, receiveInterval: 20_000),
            server: "smooth-gateway/1.0",
            session: "s-1"
        )
        #expect(
            frame.encodedString()
                == "CONNECTED\nversion:1.2\nheart-beat:10000,20000\nserver:smooth-gateway/1.0\nsession:s-1\n\n\0")
    }

    @Test func receiptWithoutBodyHasNoContentLength() {
        #expect(StompFrame.receipt(id: "77").encodedString() == "RECEIPT\nreceipt-id:77\n\n\0")
    }

    @Test func errorBuilderIncludesReceiptIdContentTypeAndLength() {
        let frame = StompFrame.error(message: "frame larger than 65536 bytes", receiptId: "r-9", body: bytes("detail"))
        #expect(
            frame.encodedString()
                == "ERROR\nmessage:frame larger than 65536 bytes\nreceipt-id:r-9\ncontent-type:text/plain\n"
                + "content-length:6\n\ndetail\0")
        #expect(StompFrame.error(message: "bye").encodedString() == "ERROR\nmessage:bye\n\n\0")
    }

    @Test func escapesNamesAndValuesOfOrdinaryFrames() {
        var headers = StompHeaders()
        headers.append("a:b", "c:d\\e\nf\rg")
        let frame = StompFrame(command: .message, headers: headers)
        #expect(frame.encodedString() == "MESSAGE\na\\cb:c\\cd\\\\e\\nf\\rg\n\n\0")
    }

    @Test func connectedHeadersAreNotEscapedAndUnrepresentableOctetsAreDropped() {
        let frame = StompFrame(
            command: .connected,
            headers: ["server": "host:8080\\x", "na:me": "line\r\nbreak\0"]
        )
        #expect(frame.encodedString() == "CONNECTED\nserver:host:8080\\x\nname:linebreak\n\n\0")
    }

    @Test func callerSuppliedContentLengthIsNotDuplicated() {
        let frame = StompFrame(command: .message, headers: ["content-length": "2"], body: bytes("hi"))
        #expect(frame.encodedString() == "MESSAGE\ncontent-length:2\n\nhi\0")
    }

    @Test func encodedStringIsNilForNonUTF8BodyButBytesAreExact() {
        let frame = StompFrame(command: .message, body: [0xFF, 0x00, 0x41])
        #expect(frame.encodedString() == nil)
        #expect(frame.encoded() == bytes("MESSAGE\ncontent-length:3\n\n") + [0xFF, 0x00, 0x41, 0x00])
    }

    @Test func roundTripsFramesWithSpecialCharactersAndBinaryBody() throws {
        var headers = StompHeaders()
        headers.append("destination", "/topic/group/1")
        headers.append("weird:name", "multi\nline\\value:with\rstuff")
        headers.append("unicode", "héllo ✓")
        headers.append("destination", "/second/is/kept")
        let original = StompFrame(command: .message, headers: headers, body: [1, 0, 2, 0, 0, 3])

        let results = try parse(original.encoded())
        #expect(results.count == 1)
        guard case .frame(let decoded) = results.first else {
            Issue.record("expected a frame")
            return
        }
        var expected = original
        expected.headers.append("content-length", "6")
        #expect(decoded == expected)
        #expect(decoded.headers["destination"] == "/topic/group/1")
    }

    @Test(arguments: [
        StompFrame.connected(version: .v1_1, heartBeat: .none, server: "s", session: nil),
        StompFrame.receipt(id: "abc"),
        StompFrame(command: .subscribe, headers: ["id": "0", "destination": "/topic/direct/9", "ack": "auto"]),
        StompFrame(command: .disconnect, headers: ["receipt": "x:y"]),
        StompFrame(command: .connect, headers: ["accept-version": "1.2", "host": "a:b", "passcode": "p\\q"]),
    ])
    func roundTripsBodilessFramesExactly(frame: StompFrame) throws {
        #expect(try parse(frame.encoded()) == [.frame(frame)])
    }
}

@Suite("Headers")
struct HeaderTests {
    @Test func lookupReturnsFirstOccurrenceAndKeepsAllInOrder() {
        var headers: StompHeaders = ["a": "1", "b": "2", "a": "3"]
        #expect(headers["a"] == "1")
        #expect(headers.values(for: "a") == ["1", "3"])
        #expect(headers["A"] == nil)
        #expect(headers.map(\.name) == ["a", "b", "a"])

        headers["a"] = "9"
        #expect(headers.map(\.value) == ["9", "2"])
        headers["c"] = "4"
        headers["b"] = nil
        #expect(headers == StompHeaders([("a", "9"), ("c", "4")]))
        #expect(headers.contains("c") && !headers.contains("b"))
    }
}
