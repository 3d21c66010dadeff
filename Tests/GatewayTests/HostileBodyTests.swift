import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOFoundationCompat
import NIOHTTP1
import NIOCore
import SuiteTesting
import Testing

/// Bodies sent by an attacker, or a buggy client, through a real HTTP client that reuses its
/// connections (the way `requests.Session` and URLSession do): the gateway answers each with a
/// clear E11 and stays up for everybody else.
@Suite("Hostile request bodies at the edge")
struct HostileBodyTests {
    /// One pooled client per test: keep-alive connections are what made the early answer and
    /// Hummingbird's read of the next request race on one connection.
    static func withClient(_ body: (HTTPClient) async throws -> Void) async throws {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await body(client)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    static func post(
        _ client: HTTPClient, _ url: String, contentType: String, body: ByteBuffer, chunked: Bool = false, token: String? = nil,
        method: HTTPMethod = .POST
    ) async throws -> (status: UInt, code: String?) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "SesacKey", value: Stack.appKey)
        request.headers.add(name: "Content-Type", value: contentType)
        if let token { request.headers.add(name: "Authorization", value: token) }
        if chunked {
            // Handed over in 64 KB pieces with no declared length: Transfer-Encoding: chunked.
            let (pieces, feed) = AsyncStream.makeStream(of: ByteBuffer.self)
            var rest = body
            while let piece = rest.readSlice(length: min(65_536, rest.readableBytes)), piece.readableBytes > 0 { feed.yield(piece) }
            feed.finish()
            request.body = .stream(pieces, length: .unknown)
        } else {
            request.body = .bytes(body)
        }
        let response = try await client.execute(request, timeout: .seconds(60))
        let answer = try await response.body.collect(upTo: 1 << 20)
        let code = (try? JSONSerialization.jsonObject(with: Data(buffer: answer)) as? [String: Any])?["errorCode"] as? String
        return (response.status.code, code)
    }

    static func multipart(_ boundary: String, field: String, bytes: Int) -> ByteBuffer {
        var body = ByteBuffer()
        body.writeString("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(field)\"\r\n\r\n")
        body.writeRepeatingByte(UInt8(ascii: "x"), count: bytes)
        body.writeString("\r\n--\(boundary)--\r\n")
        return body
    }

    /// Runs `count` calls, `width` at a time; returns every outcome.
    static func burst(_ count: Int, width: Int, _ call: @escaping @Sendable () async throws -> (UInt, String?)) async throws -> [String] {
        try await withThrowingTaskGroup(of: String.self) { group in
            var outcomes: [String] = []
            for i in 0..<count {
                if i >= width, let done = try await group.next() { outcomes.append(done) }
                group.addTask {
                    let (status, code) = try await call()
                    return "\(status) \(code ?? "-")"
                }
            }
            for try await done in group { outcomes.append(done) }
            return outcomes
        }
    }

    @Test("16 logins with a 5 MB JSON body, 8 at a time: every one E11 (413), and the gateway still serves logins")
    func largeJSONLogins() async throws {
        try await Stack.run { s in
            let user = try await s.join(email: "victim@example.com", password: "correct horse 1")
            let port = try #require(s.client.port)
            let password = String(repeating: "x", count: 5_000_000)
            let body = ByteBuffer(string: #"{"email":"a@b.c","password":"\#(password)"}"#)
            try await Self.withClient { client in
                let outcomes = try await Self.burst(16, width: 8) {
                    try await Self.post(client, "http://127.0.0.1:\(port)/v1/users/login", contentType: "application/json", body: body)
                }
                #expect(outcomes == Array(repeating: "413 E11", count: 16), "\(outcomes)")
                let login = try await s.request(.post, "/v1/users/login", json: #"{"email":"victim@example.com","password":"correct horse 1"}"#)
                #expect(login.status == .ok)
                _ = user
            }
        }
    }

    @Test("16 large bodies that the service refuses before reading them, 8 at a time on pooled connections: every answer arrives, no crash")
    func earlyRefusedLargeBodies() async throws {
        // A multipart body may be 26 MiB at the edge, so the gateway streams it to auth, which
        // refuses a login body after 1 MiB without reading the rest: the upload is still running
        // when the answer comes back. Before the fix this killed the gateway (a fatal error in
        // NIO: two readers of one request body).
        try await Stack.run { s in
            let port = try #require(s.client.port)
            let body = Self.multipart("b0undary", field: "password", bytes: 5_000_000)
            try await Self.withClient { client in
                let outcomes = try await Self.burst(16, width: 8) {
                    try await Self.post(client, "http://127.0.0.1:\(port)/v1/users/login", contentType: "multipart/form-data; boundary=b0undary", body: body)
                }
                #expect(outcomes.allSatisfy { $0.hasPrefix("4") && $0.hasSuffix("E11") }, "\(outcomes)")
                #expect(outcomes.count == 16)
            }
            let health = try await s.request(.post, "/v1/users/validation/email", json: #"{"email":"new@example.com"}"#)
            #expect(health.status == .ok)
        }
    }

    @Test("a chunked body is held to the limit though it declares no length: E11 (413)")
    func chunkedOverLimit() async throws {
        try await Stack.run(gateway: ["GATEWAY_MAX_BODY_BYTES": "1000000", "GATEWAY_MAX_PLAIN_BODY_BYTES": "100000"]) { s in
            let user = try await s.join()
            let port = try #require(s.client.port)
            try await Self.withClient { client in
                // Multipart (the 1 MB limit) to the avatar upload, 3 MB in chunks.
                let upload = try await Self.post(
                    client, "http://127.0.0.1:\(port)/v1/users/me/image", contentType: "multipart/form-data; boundary=b0undary",
                    body: Self.multipart("b0undary", field: "image", bytes: 3_000_000), chunked: true, token: user.token.accessToken, method: .PUT
                )
                #expect(upload.status == 413 && upload.code == "E11", "\(upload)")
                // JSON (the 100 KB limit), 300 KB in chunks.
                let json = try await Self.post(
                    client, "http://127.0.0.1:\(port)/v1/users/login", contentType: "application/json",
                    body: ByteBuffer(string: #"{"email":"a@b.c","password":"\#(String(repeating: "y", count: 300_000))"}"#), chunked: true
                )
                #expect(json.status == 413 && json.code == "E11", "\(json)")
                // A chunked body within the limit still goes through.
                let fine = try await Self.post(
                    client, "http://127.0.0.1:\(port)/v1/users/validation/email", contentType: "application/json",
                    body: ByteBuffer(string: #"{"email":"chunked@example.com"}"#), chunked: true
                )
                #expect(fine.status == 200, "\(fine)")
            }
        }
    }
}
