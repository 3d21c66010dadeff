import MultipartKit
import NIOCore
import ServiceKit
import TestSupport
import Testing

@testable import Uploads

@Suite("Multipart scanner")
struct MultipartScannerTests {
    static let boundary = "6ad51d58cd4c4e9ac3522deb56e905c6"

    /// A part as the tests compare them: its headers in order and its whole body.
    struct Part: Equatable, CustomStringConvertible {
        var headers: [String] = []
        var body: [UInt8] = []
        var description: String { "\(headers) \(body.count) bytes" }
    }

    static func body(
        headerName: String = "Content-Disposition", filename: String = "사진.jpeg", content: [UInt8] = Array("é\r\n-- not a boundary\r\n--6ad5".utf8),
        boundary: String = boundary
    ) -> [UInt8] {
        var out = Array(
            "preamble\r\n--\(boundary)\r\n\(headerName): form-data; name=\"image\"; filename=\"\(filename)\"\r\nContent-Type: image/jpeg\r\n\r\n".utf8)
        out += content
        out += Array("\r\n--\(boundary)  \r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n새싹\r\n--\(boundary)--\r\n\u{00FF}epilogue".utf8)
        return out
    }

    /// Parses `bytes` fed in `chunks` (split points), returning the parts and whether the closing
    /// delimiter was read.
    static func scan(_ bytes: [UInt8], splits: [Int] = [], boundary: String = boundary) throws -> (parts: [Part], complete: Bool) {
        var scanner = try MultipartScanner(boundary: boundary)
        var parts: [Part] = []
        var current = Part()
        var start = 0
        for end in splits + [bytes.count] {
            try scanner.feed(ByteBuffer(bytes: bytes[start..<end])) { event in
                switch event {
                case .header(let name, let value): current.headers.append("\(name)=\(value)")
                case .body(let piece): current.body += Array(piece.readableBytesView)
                case .partEnd:
                    parts.append(current)
                    current = Part()
                }
            }
            start = end
        }
        return (parts, scanner.isComplete)
    }

    /// What MultipartKit 4.7.1 makes of the same bytes.
    static func reference(_ bytes: [UInt8], boundary: String = boundary) throws -> [Part] {
        let parser = MultipartParser(boundary: boundary)
        var parts: [Part] = []
        var current = Part()
        parser.onHeader = { name, value in current.headers.append("\(name)=\(value)") }
        parser.onBody = { piece in current.body += Array(piece.readableBytesView) }
        parser.onPartComplete = {
            parts.append(current)
            current = Part()
        }
        try parser.execute(ByteBuffer(bytes: bytes))
        return parts
    }

    @Test(
        "a well-formed body parses the same at every chunk split: UTF-8 in header values and bodies, delimiter look-alikes in a body, padding, preamble, epilogue"
    )
    func everySplit() throws {
        let bytes = Self.body()
        let whole = try Self.scan(bytes)
        #expect(whole.complete)
        #expect(
            whole.parts == [
                Part(
                    headers: ["Content-Disposition=form-data; name=\"image\"; filename=\"사진.jpeg\"", "Content-Type=image/jpeg"],
                    body: Array("é\r\n-- not a boundary\r\n--6ad5".utf8)),
                Part(headers: ["Content-Disposition=form-data; name=\"name\""], body: Array("새싹".utf8)),
            ])
        for split in 0...bytes.count {
            #expect(try Self.scan(bytes, splits: [split]).parts == whole.parts, "split at \(split)")
        }
        // Byte by byte.
        #expect(try Self.scan(bytes, splits: Array(1..<bytes.count)).parts == whole.parts)
    }

    @Test("generated bodies parse as MultipartKit parses them, whatever the chunking")
    func sameAsMultipartKit() throws {
        // Body bytes rich in the delimiter's own pieces, so partial matches happen everywhere.
        let alphabet: [[UInt8]] = [
            [13], [10], [45], Array("--".utf8), Array("\r\n--".utf8), Array("\r\n--6ad51d58".utf8), Array("6ad5".utf8), [0], [0xFF], Array("x".utf8),
        ]
        var generator = SplitMix64(state: 7)
        for round in 0..<200 {
            var bytes: [UInt8] = []
            for index in 0..<Int.random(in: 1...4, using: &generator) {
                bytes += Array("--\(Self.boundary)\r\n".utf8)
                bytes += Array("Content-Disposition: form-data; name=\"f\(index)\"\r\n\r\n".utf8)
                for _ in 0..<Int.random(in: 0...40, using: &generator) { bytes += alphabet.randomElement(using: &generator) ?? [] }
                bytes += Array("\r\n".utf8)
            }
            bytes += Array("--\(Self.boundary)--\r\n".utf8)
            let expected = try Self.reference(bytes)
            var splits: [Int] = []
            var at = 0
            while true {
                at += Int.random(in: 1...9, using: &generator)
                guard at < bytes.count else { break }
                splits.append(at)
            }
            let scanned = try Self.scan(bytes, splits: splits)
            #expect(scanned.complete)
            #expect(scanned.parts == expected, "round \(round)")
        }
    }

    @Test("a 5 MB part comes out whole, in a few slices of the chunks it came in")
    func largePart() throws {
        var content = [UInt8](repeating: 0, count: 5 * 1024 * 1024)
        for index in stride(from: 0, to: content.count, by: 4093) { content[index] = 13 }  // a CR now and then
        let bytes = Self.body(content: content)
        var scanner = try MultipartScanner(boundary: Self.boundary)
        var pieces = 0
        var received: [UInt8] = []
        var inFirst = true
        var start = 0
        for end in stride(from: 65_536, to: bytes.count, by: 65_536) + [bytes.count] {
            try scanner.feed(ByteBuffer(bytes: bytes[start..<end])) { event in
                switch event {
                case .body(let piece) where inFirst:
                    pieces += 1
                    received += Array(piece.readableBytesView)
                case .partEnd: inFirst = false
                default: break
                }
            }
            start = end
        }
        #expect(received == content)
        // One piece per chunk (plus the bytes held back at a chunk's end that might start a delimiter).
        #expect(pieces <= 2 * (bytes.count / 65_536 + 2))
    }

    @Test("a non-ASCII byte in a header name is refused (E11) at every chunk split")
    func nonASCIIHeaderNameRefused() throws {
        for name in ["Cont\u{00E9}nt-Disposition", "\u{1D0B8}\"", "X-\u{AC00}"] {
            let bytes = Self.body(headerName: name)
            for split in 0...bytes.count {
                #expect(throws: APIError.badRequest(), "\(name) split at \(split)") { try Self.scan(bytes, splits: [split]) }
            }
        }
        // In the second part's headers too.
        var bytes = Self.body()
        let second = Array("\r\nContent-Disposition: form-data; name=\"name\"".utf8)
        let index = try #require(bytes.firstRange(of: second)).lowerBound + 4
        bytes[index] = 0xC3
        #expect(throws: APIError.badRequest()) { try Self.scan(bytes, splits: [1]) }
    }

    @Test(
        "malformed bodies are E11: a header line without ':' or not ended by CRLF, a bare CR, headers over 16 KiB, a delimiter followed by junk or too many blanks"
    )
    func malformed() throws {
        let b = Self.boundary
        let cases: [(String, String)] = [
            ("no colon", "--\(b)\r\nContent-Disposition form-data\r\n\r\nx\r\n--\(b)--"),
            ("bare LF", "--\(b)\r\nContent-Disposition: form-data; name=\"a\"\n\r\nx\r\n--\(b)--"),
            ("bare CR", "--\(b)\r\nContent-Disposition: form-data;\r name=\"a\"\r\n\r\nx\r\n--\(b)--"),
            ("folded header", "--\(b)\r\nContent-Disposition: form-data;\r\n name=\"a\"\r\n\r\nx\r\n--\(b)--"),
            ("empty name", "--\(b)\r\n: form-data\r\n\r\nx\r\n--\(b)--"),
            ("junk after a delimiter", "--\(b)X\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--\(b)--"),
            ("single hyphen", "--\(b)\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--\(b)-x"),
            ("CR without LF", "--\(b)\rContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--\(b)--"),
            ("too many blanks", "--\(b)\(String(repeating: " ", count: 65))\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--\(b)--"),
            ("headers over 16 KiB", "--\(b)\r\nX-Big: \(String(repeating: "a", count: 16 * 1024))\r\n\r\nx\r\n--\(b)--"),
            ("many header lines", "--\(b)\r\n" + String(repeating: "X-A: b\r\n", count: 3000) + "\r\nx\r\n--\(b)--"),
        ]
        for (label, text) in cases {
            let bytes = Array(text.utf8)
            #expect(throws: APIError.badRequest(), "\(label)") { try Self.scan(bytes) }
            #expect(throws: APIError.badRequest(), "\(label), byte by byte") { try Self.scan(bytes, splits: Array(1..<bytes.count)) }
        }
        // An unbounded header line is refused before it is all in, not held whole.
        var scanner = try MultipartScanner(boundary: b)
        try scanner.feed(ByteBuffer(string: "--\(b)\r\nX-Big: ")) { _ in }
        #expect(throws: APIError.badRequest()) {
            for _ in 0..<100 { try scanner.feed(ByteBuffer(repeating: UInt8(ascii: "a"), count: 1024)) { _ in } }
        }
    }

    @Test("a body without its closing delimiter is not complete; nothing after the closing one is parsed")
    func truncationAndEpilogue() throws {
        let bytes = Self.body()
        let closing = try #require(bytes.firstRange(of: Array("\r\n--\(Self.boundary)--".utf8)))
        let cut = try Self.scan(Array(bytes[..<closing.lowerBound]))
        #expect(!cut.complete)
        #expect(cut.parts.count == 1)
        // Junk, even a non-ASCII header name, after the closing delimiter is ignored.
        let trailing = Array(bytes[..<closing.upperBound]) + Array("\r\n--\(Self.boundary)\r\nX-\u{AC00}: v\r\n\r\n".utf8)
        #expect(try Self.scan(trailing).parts.count == 2)
        // A body with no delimiter at all.
        let text = try Self.scan(Array("just text".utf8))
        #expect(text.parts.isEmpty && !text.complete)
    }

    @Test("a boundary that is empty, too long, or has control or non-ASCII bytes is refused")
    func badBoundary() {
        for boundary in ["a\r\nb", "경계", "a b", "", String(repeating: "b", count: 201)] {
            #expect(throws: APIError.badRequest(), "\(boundary.prefix(8))") { try MultipartScanner(boundary: boundary) }
        }
        #expect(throws: Never.self) { try MultipartScanner(boundary: String(repeating: "b", count: 200)) }
    }
}
