import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SuiteTesting
import Testing

/// A multipart body with a non-ASCII byte in a part's header name used to crash the service that
/// parsed it (MultipartKit, the parser then, trapped on it; found by the schemathesis run). Each
/// multipart route of each service answers E11 (`MultipartScanner` refuses such a name), and the
/// service keeps answering.
@Suite("Hostile multipart bodies")
struct HostileMultipartTests {
    static let boundary = "6ad51d58cd4c4e9ac3522deb56e905c6"
    static let body = ByteBuffer(
        bytes: Array("--\(boundary)\r\n".utf8) + [0xF3, 0x9D, 0x82, 0xB8] + Array("\"\u{0B}: x\r\n\r\nbody\r\n--\(boundary)--\r\n".utf8))

    @Test("non-ASCII header name, truncated body, 20 KiB header block, bare-LF header line: image, workspace, message routes answer E11; all stay up")
    func nonASCIIHeaderName() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let (workspace, channel) = try await s.sharedChannel(owner, try await s.user())
            let routes: [(HTTPRequest.Method, String)] = [
                (.put, "/v1/users/me/image"), (.post, "/v1/workspaces"), (.post, "/v1/workspaces/\(workspace)/channels/\(channel)/chats"),
            ]
            let b = Self.boundary
            // MultipartScanner's refusals too: no closing delimiter, a 20 KiB header block (bytes),
            // a header line ended by a bare LF.
            let bodies =
                [Self.body]
                + [
                    "--\(b)\r\nContent-Disposition: form-data; name=\"image\"; filename=\"a.png\"\r\n\r\nbody",
                    "--\(b)\r\nX-Big: \(String(repeating: "가", count: 7_000))\r\n\r\nbody\r\n--\(b)--\r\n",
                    "--\(b)\r\nContent-Disposition: form-data; name=\"image\"\n\r\nbody\r\n--\(b)--\r\n",
                ].map { ByteBuffer(string: $0) }
            for (method, uri) in routes {
                for body in bodies {
                    let response = try await s.client.execute(
                        uri: uri, method: method, headers: s.headers(token: owner.token, contentType: "multipart/form-data; boundary=\(b)"),
                        body: body)
                    #expect(response.status == .badRequest && errorCode(response) == "E11", "\(uri): \(outcome(response))")
                }
            }
            // Every service still answers.
            #expect(try await s.get("/v1/users/me", owner).status == .ok)
            #expect(try await s.get("/v1/workspaces/\(workspace)", owner).status == .ok)
            #expect(try await s.get("/v1/workspaces/\(workspace)/channels/\(channel)/chats", owner).status == .ok)
        }
    }
}
