import MultipartKit
import NIOCore
import ServiceKit
import Testing

@testable import Uploads

@Suite("Multipart header guard")
struct MultipartHeaderGuardTests {
    static let boundary = "6ad51d58cd4c4e9ac3522deb56e905c6"

    static func body(headerName: String = "Content-Disposition", filename: String = "사진.jpeg", content: [UInt8] = Array("é\r\n-- not a boundary".utf8))
        -> [UInt8]
    {
        var out = Array("--\(boundary)\r\n\(headerName): form-data; name=\"image\"; filename=\"\(filename)\"\r\nContent-Type: image/jpeg\r\n\r\n".utf8)
        out += content
        out += Array("\r\n--\(boundary)\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n새싹\r\n--\(boundary)--\r\n\u{00FF}epilogue".utf8)
        return out
    }

    /// Feeds `bytes` in two chunks split at `at`.
    static func check(_ bytes: [UInt8], splitAt at: Int) throws {
        var guardrail = try MultipartHeaderGuard(boundary: boundary)
        try guardrail.check(ByteBuffer(bytes: bytes[..<at]))
        try guardrail.check(ByteBuffer(bytes: bytes[at...]))
    }

    @Test("well-formed bodies pass at every chunk split: UTF-8 in header values, bodies and the epilogue")
    func wellFormedPasses() throws {
        let bytes = Self.body()
        for split in 0...bytes.count { try Self.check(bytes, splitAt: split) }
        // And MultipartKit parses what passed.
        let parser = MultipartParser(boundary: Self.boundary)
        var names: [String] = []
        parser.onHeader = { name, _ in names.append(name) }
        try parser.execute(ByteBuffer(bytes: bytes))
        #expect(names == ["Content-Disposition", "Content-Type", "Content-Disposition"])
    }

    @Test("a non-ASCII byte in a header name is refused (E11) at every chunk split, before MultipartKit would trap on it")
    func nonASCIIHeaderNameRefused() throws {
        for name in ["Cont\u{00E9}nt-Disposition", "\u{1D0B8}\"", "X-\u{AC00}"] {
            let bytes = Self.body(headerName: name)
            for split in 0...bytes.count {
                #expect(throws: APIError.badRequest(), "\(name) split at \(split)") { try Self.check(bytes, splitAt: split) }
            }
        }
        // In the second part's headers too.
        var bytes = Self.body()
        let second = Array("\r\n--\(Self.boundary)\r\nContent-Disposition".utf8)
        let index = try #require(bytes.firstRange(of: second)).upperBound - "Disposition".utf8.count
        bytes[index] = 0xC3
        #expect(throws: APIError.badRequest()) { try Self.check(bytes, splitAt: 1) }
    }

    @Test("a boundary with control or non-ASCII bytes is refused")
    func badBoundary() {
        #expect(throws: APIError.badRequest()) { try MultipartHeaderGuard(boundary: "a\r\nb") }
        #expect(throws: APIError.badRequest()) { try MultipartHeaderGuard(boundary: "경계") }
    }
}
