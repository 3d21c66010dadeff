import Testing

@testable import GatewayApp

@Suite("Parser")
struct ParserTests {
    @Test func parsesSendFrameWithLF() throws {
        let frame = try parseSingleFrame("SEND\ndestination:/kafka/join-channel\ncontent-type:text/plain\n\nhello\0")
        #expect(frame?.command == .send)
        #expect(frame?.headers == ["destination": "/kafka/join-channel", "content-type": "text/plain"])
        #expect(frame?.bodyString == "hello")
    }

    @Test func acceptsCRLFLineEndings() throws {
        let frame = try parseSingleFrame("SUBSCRIBE\r\nid:0\r\ndestination:/topic/1\r\n\r\n\0")
        #expect(frame == StompFrame(command: .subscribe, headers: ["id": "0", "destination": "/topic/1"]))
    }

    @Test func reportsHeartbeatsForBareEOLs() throws {
        #expect(try parse("\n") == [.heartbeat])
        #expect(try parse("\r\n") == [.heartbeat])
        #expect(try parse("\n\r\n\n") == [.heartbeat, .heartbeat, .heartbeat])
    }

    @Test func parsesSeveralFramesAndHeartbeatsFromOneMessage() throws {
        let input = "\nSEND\ndestination:/a\n\none\0\r\n\nACK\nid:7\n\n\0\nDISCONNECT\nreceipt:9\n\n\0"
        let results = try parse(input)
        #expect(
            results == [
                .heartbeat,
                .frame(StompFrame(command: .send, headers: ["destination": "/a"], body: "one")),
                .heartbeat, .heartbeat,
                .frame(StompFrame(command: .ack, headers: ["id": "7"])),
                .heartbeat,
                .frame(StompFrame(command: .disconnect, headers: ["receipt": "9"])),
            ])
    }

    @Test func reassemblesFrameSplitAcrossThreeAppends() throws {
        var parser = StompParser()
        parser.append(bytes("SEN"))
        #expect(try parser.next() == nil)
        parser.append(bytes("D\ndestination:/to"))
        #expect(try parser.next() == nil)
        parser.append(bytes("pic/1\n\nbody\0"))
        #expect(try parser.next() == .frame(StompFrame(command: .send, headers: ["destination": "/topic/1"], body: "body")))
        #expect(try parser.next() == nil)
        #expect(parser.bufferedByteCount == 0)
    }

    @Test func givesSameResultForEverySplitPoint() throws {
        let input = bytes("SEND\r\ncontent-length:3\r\na:b\\c\r\n\r\nx\0y\0\n\nMESSAGE\nm:1\n\nz\0")
        let expected = try parse(input)
        #expect(expected.count == 4)
        for split in 0...input.count {
            var parser = StompParser()
            parser.append(input[..<split])
            var results = try parser.drain()
            parser.append(input[split...])
            results += try parser.drain()
            #expect(results == expected, "split at \(split)")
        }
    }

    @Test func contentLengthAllowsNulInBody() throws {
        var input = bytes("SEND\ndestination:/a\ncontent-length:5\n\n")
        input += [0x61, 0x00, 0x62, 0x00, 0x63, 0x00]
        input += bytes("\nACK\nid:1\n\n\0")
        let results = try parse(input)
        #expect(results.count == 3)
        #expect(results.first == .frame(StompFrame(command: .send, headers: ["destination": "/a", "content-length": "5"], body: [0x61, 0, 0x62, 0, 0x63])))
        #expect(results.last == .frame(StompFrame(command: .ack, headers: ["id": "1"])))
    }

    @Test func contentLengthZeroMeansEmptyBody() throws {
        let frame = try parseSingleFrame("SEND\ncontent-length:0\n\n\0")
        #expect(frame?.body == [])
    }

    @Test func bodyWithoutContentLengthEndsAtFirstNul() throws {
        let results = try parse("SEND\n\nab\0SEND\n\ncd\0")
        #expect(
            results == [
                .frame(StompFrame(command: .send, body: "ab")),
                .frame(StompFrame(command: .send, body: "cd")),
            ])
    }

    @Test func unescapesHeadersOfOrdinaryFrames() throws {
        let frame = try parseSingleFrame("SEND\nna\\cme:a\\cb\\\\c\\nd\\re\n\n\0")
        #expect(frame?.headers["na:me"] == "a:b\\c\nd\re")
    }

    @Test func doesNotUnescapeConnectOrConnected() throws {
        let connect = try parseSingleFrame("CONNECT\nlogin:a\\cb\npasscode:x\\ty\\\n\n\0")
        #expect(connect?.headers["login"] == "a\\cb")
        #expect(connect?.headers["passcode"] == "x\\ty\\")
        let connected = try parseSingleFrame("CONNECTED\nserver:s\\n\n\n\0")
        #expect(connected?.headers["server"] == "s\\n")
    }

    @Test func stompCommandIsUnescaped() throws {
        let frame = try parseSingleFrame("STOMP\nhost:a\\cb\n\n\0")
        #expect(frame?.headers["host"] == "a:b")
        #expect(throws: StompParseError.invalidEscape("\\t")) { try parse("STOMP\nhost:a\\tb\n\n\0") }
    }

    @Test func repeatedHeadersFirstWinsButAllAreKept() throws {
        let frame = try parseSingleFrame("MESSAGE\nfoo:World\nfoo:Hello\n\n\0")
        #expect(frame?.headers["foo"] == "World")
        #expect(frame?.headers.values(for: "foo") == ["World", "Hello"])
    }

    @Test func splitsHeaderAtFirstColonAndAllowsEmptyValue() throws {
        let frame = try parseSingleFrame("SEND\ndestination:/a:b\nempty:\n\n\0")
        #expect(frame?.headers["destination"] == "/a:b")
        #expect(frame?.headers["empty"] == "")
    }

    @Test func onlyFirstContentLengthIsHonoured() throws {
        let frame = try parseSingleFrame("SEND\ncontent-length:2\ncontent-length:oops\n\nab\0")
        #expect(frame?.body == bytes("ab"))
    }

    @Test func streamsManyFramesInOddChunksWithBoundedBuffer() throws {
        let one = StompFrame.message(destination: "/topic/1", subscription: "0", messageId: "m", body: bytes("payload"))
        var stream: [UInt8] = []
        for _ in 0..<500 { stream += one.encoded() + [0x0A] }
        var parser = StompParser()
        var frames = 0
        var heartbeats = 0
        var offset = 0
        while offset < stream.count {
            let end = min(offset + 7, stream.count)
            parser.append(stream[offset..<end])
            offset = end
            for result in try parser.drain() {
                if case .frame(let frame) = result, frame.body == bytes("payload") { frames += 1 }
                if result == .heartbeat { heartbeats += 1 }
            }
            #expect(parser.bufferedByteCount < 100)
        }
        #expect(frames == 500)
        #expect(heartbeats == 500)
        #expect(parser.bufferedByteCount == 0)
    }
}
