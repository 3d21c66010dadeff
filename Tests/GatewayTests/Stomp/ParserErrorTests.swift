import Testing

@testable import GatewayApp

@Suite("Parser errors and limits")
struct ParserErrorTests {
    @Test func rejectsUnknownCommands() {
        #expect(throws: StompParseError.unknownCommand("FOO")) { try parse("FOO\n\n\0") }
        #expect(throws: StompParseError.unknownCommand("send")) { try parse("send\n\n\0") }
        #expect(throws: StompParseError.unknownCommand(" SEND")) { try parse(" SEND\n\n\0") }
        #expect(StompParseError.unknownCommand("FOO").message == "unknown command 'FOO'")
    }

    @Test func rejectsUndefinedEscapeSequences() {
        #expect(throws: StompParseError.invalidEscape("\\t")) { try parse("SEND\na:x\\ty\n\n\0") }
        #expect(throws: StompParseError.invalidEscape("\\")) { try parse("SEND\na:x\\\n\n\0") }
        #expect(throws: StompParseError.invalidEscape("\\C")) { try parse("SEND\na\\C:x\n\n\0") }
        #expect(StompParseError.invalidEscape("\\t").message == "undefined escape sequence '\\t' in header")
    }

    @Test func rejectsHeaderLineWithoutColonOrName() {
        #expect(throws: StompParseError.missingColon) { try parse("SEND\ndestination\n\n\0") }
        #expect(throws: StompParseError.emptyHeaderName) { try parse("SEND\n:value\n\n\0") }
    }

    @Test(arguments: ["abc", "-1", "", " 5", "5 ", "+5", "1.5", "0x10", "٣"])
    func rejectsMalformedContentLength(value: String) {
        #expect(throws: StompParseError.invalidContentLength(value)) {
            try parse("SEND\ncontent-length:\(value)\n\nabc\0")
        }
    }

    @Test func rejectsOversizedContentLengthBeforeBodyArrives() throws {
        var parser = StompParser(maxFrameBytes: 1_000)
        parser.append(bytes("SEND\ncontent-length:2000\n\n"))
        #expect(throws: StompParseError.frameTooLarge(limit: 1_000)) { try parser.next() }
        #expect(throws: StompParseError.frameTooLarge(limit: 65_536)) {
            try parse("SEND\ncontent-length:99999999999999999999999999\n\n\0")
        }
    }

    @Test func rejectsBodyLongerThanContentLength() {
        #expect(throws: StompParseError.missingNullTerminator) { try parse("SEND\ncontent-length:3\n\nabcd\0") }
    }

    @Test func rejectsNulInsideHeaders() {
        #expect(throws: StompParseError.unexpectedNull) { try parse("SEND\ndestination:/a\0") }
        #expect(throws: StompParseError.unexpectedNull) { try parse("\0") }
    }

    @Test func rejectsInvalidUTF8InHeaders() {
        #expect(throws: StompParseError.invalidUTF8) { try parse(bytes("SEND\na:") + [0xC3, 0x28] + bytes("\n\n\0")) }
    }

    @Test func frameLimitCountsCommandThroughNul() throws {
        let frame = bytes("SEND\n\n") + [UInt8](repeating: 0x78, count: 93) + [0]
        #expect(frame.count == 100)
        #expect(try parse(frame, with: StompParser(maxFrameBytes: 100)).count == 1)
        #expect(throws: StompParseError.frameTooLarge(limit: 99)) { try parse(frame, with: StompParser(maxFrameBytes: 99)) }
    }

    @Test func oversizedBodyFedByteByByteFailsAsSoonAsLimitIsPassed() throws {
        let input = bytes("SEND\n\n") + [UInt8](repeating: 0x78, count: 1_000) + [0]
        let failure = try #require(firstFailure(feedingBytesOf: input, to: StompParser(maxFrameBytes: 100)))
        // After 100 octets without a NUL, the frame needs at least 101: fail right there.
        #expect(failure.index == 99)
        #expect(failure.error == .frameTooLarge(limit: 100))
        #expect(failure.error.message == "frame larger than 100 bytes")
    }

    @Test func oversizedHeaderSectionFedByteByByteFailsBeforeNul() throws {
        var input = bytes("SEND\n")
        for index in 0..<20 { input += bytes("header\(index):value\n") }
        input += bytes("\n\0")
        let failure = try #require(firstFailure(feedingBytesOf: input, to: StompParser(maxFrameBytes: 64)))
        #expect(failure.index == 63)
        #expect(failure.error == .frameTooLarge(limit: 64))
    }

    @Test func headerLineLimitIsCheckedWhileBuffering() throws {
        let limit = 16
        let ok = "SEND\na:" + String(repeating: "v", count: 14) + "\r\n\n\0"
        #expect(try parse(ok, with: StompParser(maxHeaderLineBytes: limit)).count == 1)

        let input = bytes("SEND\na:" + String(repeating: "v", count: 500) + "\n\n\0")
        let failure = try #require(firstFailure(feedingBytesOf: input, to: StompParser(maxHeaderLineBytes: limit)))
        #expect(failure.index == 5 + limit)  // the 17th octet of the header line
        #expect(failure.error == .headerLineTooLong(limit: limit))
        #expect(failure.error.message == "header line longer than 16 bytes")
    }

    @Test func commandLimitIsCheckedWhileBuffering() throws {
        let input = bytes(String(repeating: "X", count: 100))
        let failure = try #require(firstFailure(feedingBytesOf: input, to: StompParser(maxCommandBytes: 12)))
        #expect(failure.index == 12)
        #expect(failure.error == .commandTooLong(limit: 12))
        #expect(try parse("UNSUBSCRIBE\r\nid:1\n\n\0", with: StompParser(maxCommandBytes: 11)).count == 1)
    }

    @Test func headerCountLimit() throws {
        let parser = StompParser(maxHeaderCount: 3)
        #expect(try parse("SEND\na:1\nb:2\nc:3\n\n\0", with: parser).count == 1)
        #expect(throws: StompParseError.tooManyHeaders(limit: 3)) { try parse("SEND\na:1\nb:2\nc:3\nd:4\n\n\0", with: parser) }
        #expect(StompParseError.tooManyHeaders(limit: 3).message == "more than 3 headers")
    }

    @Test func parserStaysFailedAndDropsInputAfterAnError() throws {
        var parser = StompParser()
        parser.append(bytes("SEND\n\n\0BOGUS\n\n\0SEND\n\n\0"))
        #expect(try parser.next() == .frame(StompFrame(command: .send)))
        #expect(throws: StompParseError.unknownCommand("BOGUS")) { try parser.next() }
        #expect(parser.hasFailed)
        #expect(parser.bufferedByteCount == 0)
        parser.append(bytes("SEND\n\n\0"))
        #expect(parser.bufferedByteCount == 0)
        #expect(throws: StompParseError.unknownCommand("BOGUS")) { try parser.next() }
    }

    @Test func errorMessagesTruncateClientSuppliedText() {
        let long = String(repeating: "A", count: 100)
        #expect(StompParseError.unknownCommand(long).message == "unknown command '\(String(repeating: "A", count: 32))...'")
        #expect(StompParseError.frameTooLarge(limit: 65_536).message == "frame larger than 65536 bytes")
    }
}
