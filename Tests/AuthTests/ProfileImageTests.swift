import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SuiteTesting
import Testing

@Suite("Profile images", .serialized)
struct ProfileImageTests {
    func upload(_ s: Stack, token: String, _ part: (body: ByteBuffer, contentType: String)) async throws -> TestResponse {
        try await s.client.execute(uri: "/v1/users/me/image", method: .put, headers: s.headers(token: token, contentType: part.contentType), body: part.body)
    }

    @Test("upload, serve to a signed-in client, replace (old file gone)")
    func uploadAndServe() async throws {
        try await Stack.run { s in
            let user = try await s.join()
            let token = user.token.accessToken
            let first = try await upload(s, token: token, multipart(file: pngBytes, filename: "me.png", contentType: "image/png"))
            #expect(first.status == .ok, "\(String(buffer: first.body))")
            try expectContractDates(first)
            let path = try #require(jsonObject(first)?["profileImage"] as? String)
            #expect(path.hasPrefix("/static/profiles/") && path.hasSuffix(".png"))
            #expect(jsonObject(first)?["sesacCoin"] == nil)

            let served = try await s.request(.get, "/v1" + path, token: token, headers: s.headers(token: token, contentType: nil))
            #expect(served.status == .ok)
            #expect(served.headers[.contentType] == "image/png")
            #expect(Array(served.body.readableBytesView) == pngBytes)
            // Without a token the edge refuses.
            #expect(errorCode(try await s.request(.get, "/v1" + path, headers: s.headers(contentType: nil))) == "E02")

            // AMOR sends JPEG as the non-standard image/jpg: accepted by content, not label.
            let second = try await upload(s, token: token, multipart(file: jpegBytes, filename: "a.jpg", contentType: "image/jpg"))
            let newPath = try #require(jsonObject(second)?["profileImage"] as? String)
            #expect(newPath.hasSuffix(".jpg"))
            #expect(
                errorCode(try await s.request(.get, "/v1" + path, headers: s.headers(token: token, contentType: nil))) == "E13", "replaced image is deleted")
            #expect(try await s.request(.get, "/v1/users/me", token: token).status == .ok)
        }
    }

    @Test("refused: not an image, over 5 MB, no image part, not multipart; traversal names are E13")
    func refusals() async throws {
        try await Stack.run { s in
            let token = try await s.join().token.accessToken
            let text = try await upload(s, token: token, multipart(file: Array("#!/bin/sh\nrm -rf /".utf8), contentType: "image/jpeg"))
            #expect(errorCode(text) == "E11")
            let big = try await upload(s, token: token, multipart(file: jpegBytes + Array(repeating: 0, count: 5 * 1024 * 1024)))
            #expect(errorCode(big) == "E11")
            #expect(errorCode(try await upload(s, token: token, multipart(file: pngBytes, name: "photo"))) == "E11")
            #expect(errorCode(try await s.request(.put, "/v1/users/me/image", token: token, json: #"{"image":"x"}"#)) == "E11")
            for name in ["..%2F..%2Fetc%2Fpasswd", "passwd", "0190a0a0-0000-7000-8000-000000000000.png", "../auth-files"] {
                let r = try await s.request(.get, "/v1/static/profiles/\(name)", headers: s.headers(token: token, contentType: nil))
                #expect(r.status != .ok && ["E13", "E97"].contains(errorCode(r) ?? ""), "\(name): \(r.status)")
            }
        }
    }
}
