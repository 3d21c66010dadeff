import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing

/// `/auth-server/auth/info`, `/auth/name/{id}` and `/auth/profile` (image and bio).
@Suite("Smooth /auth-server: profiles", .serialized)
struct SmoothProfileTests {
    @Test("auth/info is {id, email, name, code} plus profileImage and bio once set; no token is an empty 401")
    func info() async throws {
        try await Stack.run(services: [.auth]) { s in
            let user = try await s.smoothUser()
            let answer = try await s.smooth(.get, "/auth-server/auth/info", user)
            #expect(answer.outcome == "200 1000")
            let result = try #require(answer.result)
            #expect(SmoothAuth.keys(result) == ["code", "email", "id", "name"])
            #expect(result["id"] as? Int == user.id && result["email"] as? String == user.email)
            #expect(result["name"] as? String == user.name && result["code"] as? String == user.code)

            #expect(try await s.smooth(.patch, "/auth-server/auth/profile", user, json: #"{"bio":"안녕하세요 👋"}"#).outcome == "200 1000")
            #expect(
                try await s.smoothMultipart(.post, "/auth-server/auth/profile", user, fields: [:], file: pngBytes, contentType: "image/png").outcome
                    == "200 1000")
            let full = try #require(try await s.smooth(.get, "/auth-server/auth/info", user).result)
            #expect(SmoothAuth.keys(full) == ["bio", "code", "email", "id", "name", "profileImage"])
            #expect(full["bio"] as? String == "안녕하세요 👋")

            let missing = try await s.smooth(.get, "/auth-server/auth/info")
            #expect(missing.status == .unauthorized && missing.body.isEmpty)
            let forged = try await s.client.execute(
                uri: "/auth-server/auth/info", method: .get, headers: s.smoothHeaders(token: "not.a.jwt", contentType: nil), body: nil)
            #expect(forged.status == .unauthorized && forged.body.readableBytes == 0)
        }
    }

    @Test("auth/name/{id} is {name, code, profileImage, bio} (null when unset) for any user's integer id; unknown 2111, not a number 2100")
    func name() async throws {
        try await Stack.run(services: [.auth]) { s in
            let viewer = try await s.smoothUser()
            let other = try await s.smoothUser()
            let answer = try await s.smooth(.get, "/auth-server/auth/name/\(other.id)", viewer)
            #expect(answer.outcome == "200 1000")
            let result = try #require(answer.result)
            #expect(SmoothAuth.keys(result) == ["bio", "code", "name", "profileImage"])
            #expect(SmoothAuth.nullKeys(result) == ["bio", "profileImage"])
            #expect(result["name"] as? String == other.name && result["code"] as? String == other.code)

            #expect(try await s.smooth(.patch, "/auth-server/auth/profile", other, json: #"{"bio":"hello"}"#).outcome == "200 1000")
            #expect(try await s.smooth(.get, "/auth-server/auth/name/\(other.id)", viewer).result?["bio"] as? String == "hello")

            let unknown = other.id == 1 ? 2 : other.id - 1
            #expect(try await s.smooth(.get, "/auth-server/auth/name/\(unknown)", viewer).outcome == "400 2111")
            #expect(try await s.smooth(.get, "/auth-server/auth/name/abc", viewer).outcome == "400 2100")
            #expect(try await s.smooth(.get, "/auth-server/auth/name/-1", viewer).outcome == "400 2100")
            #expect(try await s.smooth(.get, "/auth-server/auth/name/\(other.id)").status == .unauthorized)
        }
    }

    @Test("PATCH auth/profile sets the bio (≤ 190 characters, empty clears it); over 190, missing or malformed is 2100")
    func bio() async throws {
        try await Stack.run(services: [.auth]) { s in
            let user = try await s.smoothUser()
            let exactly = String(repeating: "가", count: 190)
            #expect(try await s.smooth(.patch, "/auth-server/auth/profile", user, json: #"{"bio":"\#(exactly)"}"#).outcome == "200 1000")
            #expect(try await s.smooth(.get, "/auth-server/auth/info", user).result?["bio"] as? String == exactly)
            for body in [#"{"bio":"\#(exactly)가"}"#, #"{}"#, #"{"bio":5}"#, "{bio", #"{"bio":"nul\u0000"}"#] {
                let answer = try await s.smooth(.patch, "/auth-server/auth/profile", user, json: body)
                #expect(answer.outcome == "400 2100", "\(body.prefix(40)) → \(answer.status) \(answer.body)")
            }
            #expect(try await s.smooth(.get, "/auth-server/auth/info", user).result?["bio"] as? String == exactly, "unchanged by refusals")
            #expect(try await s.smooth(.patch, "/auth-server/auth/profile", user, json: #"{"bio":""}"#).outcome == "200 1000")
            #expect(try await s.smooth(.get, "/auth-server/auth/info", user).result?["bio"] == nil)
            #expect(try await s.smooth(.patch, "/auth-server/auth/profile", json: #"{"bio":"x"}"#).status == .unauthorized)
        }
    }

    @Test("POST auth/profile stores the image: an absolute URL served without a token, the old file gone, the event with alias and tag")
    func image() async throws {
        try await Stack.run(services: [.auth], gateway: ["GATEWAY_PUBLIC_URL": "https://smooth.example.org"]) { s in
            let user = try await s.smoothUser()
            #expect(
                try await s.smoothMultipart(.post, "/auth-server/auth/profile", user, fields: [:], file: pngBytes, contentType: "image/png").outcome
                    == "200 1000")
            let url = try #require(try await s.smooth(.get, "/auth-server/auth/info", user).result?["profileImage"] as? String)
            #expect(url.hasPrefix("https://smooth.example.org/auth-server/static/profiles/") && url.hasSuffix(".png"), "\(url)")
            let path = String(url.dropFirst("https://smooth.example.org".count))
            let served = try await s.client.execute(uri: path, method: .get, headers: [:], body: nil)
            #expect(served.status == .ok && served.headers[.contentType] == "image/png")
            #expect(Array(served.body.readableBytesView) == pngBytes)

            // Replacing: the new image is served, the old one is gone.
            #expect(
                try await s.smoothMultipart(.post, "/auth-server/auth/profile", user, fields: [:], file: jpegBytes, contentType: "image/jpg").outcome
                    == "200 1000")
            let second = try #require(try await s.smooth(.get, "/auth-server/auth/info", user).result?["profileImage"] as? String)
            #expect(second.hasSuffix(".jpg") && second != url)
            #expect(try await s.client.execute(uri: path, method: .get, headers: [:], body: nil).status != .ok)

            // Other users see it too (name/{id}), and the profile event carries alias and tag.
            let viewer = try await s.smoothUser()
            #expect(try await s.smooth(.get, "/auth-server/auth/name/\(user.id)", viewer).result?["profileImage"] as? String == second)
            let updates = try await SmoothAuth.events(s, type: "auth.user.profile-updated", alias: user.id)
            #expect(updates.count == 2)
            #expect(updates.allSatisfy { ($0["alias"] as? NSNumber)?.intValue == user.id && $0["code"] as? String == user.code })
            #expect((updates.last?["profileImage"] as? String)?.hasPrefix("/static/profiles/") == true)
        }
    }

    @Test("POST auth/profile refusals: not multipart, no image part, not an image, over 5 MB; no token 401")
    func imageRefusals() async throws {
        try await Stack.run(services: [.auth]) { s in
            let user = try await s.smoothUser()
            #expect(try await s.smooth(.post, "/auth-server/auth/profile", user, json: #"{"image":"x"}"#).outcome == "400 2100")
            #expect(try await s.smoothMultipart(.post, "/auth-server/auth/profile", user, fields: ["name": "x"]).outcome == "400 2100")
            let script = Array("#!/bin/sh\necho hi".utf8)
            #expect(try await s.smoothMultipart(.post, "/auth-server/auth/profile", user, fields: [:], file: script).outcome == "400 2100")
            let big = jpegBytes + Array(repeating: 0, count: 5 * 1024 * 1024)
            let tooBig = try await s.smoothMultipart(.post, "/auth-server/auth/profile", user, fields: [:], file: big)
            #expect(tooBig.code == 2100 && tooBig.status != .internalServerError, "\(tooBig.status) \(tooBig.body)")
            #expect(try await s.smoothMultipart(.post, "/auth-server/auth/profile", nil, fields: [:], file: pngBytes).status == .unauthorized)
            #expect(try await s.smooth(.get, "/auth-server/auth/info", user).result?["profileImage"] == nil)
            #expect(try await s.client.execute(uri: "/auth-server/static/profiles/..%2F..%2Fetc%2Fpasswd", method: .get, headers: [:], body: nil).status != .ok)
        }
    }
}
