import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing

/// `/auth-server/sign-up` and `/auth-server/sign-in` through the gateway, as Smooth's app sends them.
@Suite("Smooth /auth-server: sign-up and sign-in", .serialized)
struct SmoothSignTests {
    @Test("sign-up answers the account {id, email, name, code}; the event carries the alias and the tag")
    func signUp() async throws {
        try await Stack.run(services: [.auth]) { s in
            let email = SmoothAuth.email()
            let name = "스무스_" + String(UUID().uuidString.prefix(4))
            let answer = try await SmoothAuth.signUp(s, email: email, name: name)
            #expect(answer.outcome == "200 1000", "\(answer.body)")
            #expect(answer.envelope?["message"] as? String == "요청에 성공하였습니다.")
            let result = try #require(answer.result)
            #expect(SmoothAuth.keys(result) == ["code", "email", "id", "name"])
            let id = try #require(result["id"] as? Int)
            #expect(id >= 1)
            #expect(result["email"] as? String == email && result["name"] as? String == name)
            let code = try #require(result["code"] as? String)
            #expect(code.count == 4 && code.allSatisfy(\.isASCII) && code.allSatisfy(\.isNumber))

            let registered = try await SmoothAuth.events(s, type: "auth.user.registered", alias: id)
            #expect(registered.count == 1)
            #expect((registered.first?["alias"] as? NSNumber)?.intValue == id)
            #expect(registered.first?["code"] as? String == code)
            #expect(registered.first?["nickname"] as? String == name)
        }
    }

    @Test("sign-up refusals: bad email, password length, name rule, missing fields, duplicate email (2210), malformed JSON; never a 500")
    func signUpRefusals() async throws {
        try await Stack.run(services: [.auth]) { s in
            let email = SmoothAuth.email()
            #expect(try await SmoothAuth.signUp(s, email: email, name: "first").outcome == "200 1000")
            let cases: [(String, String)] = [
                (#"{"email":"not-an-email","password":"password1","name":"abc"}"#, "400 2100"),
                (#"{"email":"\#(SmoothAuth.email())","password":"short7!","name":"abc"}"#, "400 2100"),
                (#"{"email":"\#(SmoothAuth.email())","password":"sixteen-chars-xx","name":"abc"}"#, "400 2100"),
                (#"{"email":"\#(SmoothAuth.email())","password":"password1","name":"a"}"#, "400 2100"),
                (#"{"email":"\#(SmoothAuth.email())","password":"password1","name":"sixteen-letters1"}"#, "400 2100"),
                (#"{"email":"\#(SmoothAuth.email())","password":"password1","name":"with space"}"#, "400 2100"),
                (#"{"email":"\#(SmoothAuth.email())","password":"password1","name":"emoji😀"}"#, "400 2100"),
                (#"{"email":"\#(SmoothAuth.email())","password":"password1"}"#, "400 2100"),
                (#"{"email":"\#(SmoothAuth.email())","password":12345678,"name":"abc"}"#, "400 2100"),
                (#"{"email":"\#(email.uppercased())","password":"password1","name":"second"}"#, "400 2210"),
                (#"{"email":"#, "400 2100"),
                ("[]", "400 2100"),
            ]
            for (body, expected) in cases {
                let answer = try await s.smooth(.post, "/auth-server/sign-up", json: body)
                #expect(answer.outcome == expected, "\(body) → \(answer.status) \(answer.body)")
                #expect(answer.envelope?["isSuccess"] as? Bool == false && answer.envelope?["result"] == nil, "\(answer.body)")
            }
        }
    }

    @Test("sign-in answers {id, name, code, email, accessToken, refreshToken, deviceToken, type, url}; 100-day access token; device token stored")
    func signIn() async throws {
        try await Stack.run(services: [.auth], gateway: ["GATEWAY_PUBLIC_URL": "https://smooth.example.org"]) { s in
            let email = SmoothAuth.email()
            let name = SmoothAuth.name()
            let signedUp = try #require(try await SmoothAuth.signUp(s, email: email, name: name).result)
            let answer = try await s.smooth(
                .post, "/auth-server/sign-in", json: #"{"email":"\#(email)","password":"password1","type":"ios","deviceToken":"apns-token-1"}"#)
            #expect(answer.outcome == "200 1000", "\(answer.body)")
            let result = try #require(answer.result)
            #expect(SmoothAuth.keys(result) == ["accessToken", "code", "deviceToken", "email", "id", "name", "refreshToken", "type", "url"])
            #expect(result["id"] as? Int == signedUp["id"] as? Int)
            #expect(result["code"] as? String == signedUp["code"] as? String)
            #expect(result["name"] as? String == name && result["email"] as? String == email)
            #expect(result["deviceToken"] as? String == "apns-token-1" && result["type"] as? String == "ios")
            #expect(result["url"] as? String == "https://smooth.example.org")
            #expect((result["refreshToken"] as? String)?.isEmpty == false)

            // The access token lives 100 days (the app never refreshes) and works on the surface.
            let token = try #require(result["accessToken"] as? String)
            let claims = try SmoothAuth.claims(token)
            let lifetime = try #require((claims["exp"] as? NSNumber)?.doubleValue) - (try #require((claims["iat"] as? NSNumber)?.doubleValue))
            #expect(abs(lifetime - 8_640_000) < 5, "lifetime \(lifetime)")
            let info = try await s.client.execute(
                uri: "/auth-server/auth/info", method: .get, headers: s.smoothHeaders(token: token, contentType: nil), body: nil)
            #expect(info.status == .ok, "\(String(buffer: info.body))")

            // The device token is the user's, as the suite's logins store it.
            let db = try #require(s.databases["auth"])
            var owners: [Int64] = []
            for try await alias in try await db.query(
                "SELECT u.alias FROM device_tokens d JOIN users u ON u.id = d.user_id WHERE d.token = 'apns-token-1'"
            ).decode(Int64.self) { owners.append(alias) }
            #expect(owners == [Int64(result["id"] as? Int ?? 0)])

            // Without type and device token: both null, still present.
            let bare = try await s.smooth(.post, "/auth-server/sign-in", json: #"{"email":"\#(email)","password":"password1"}"#)
            #expect(bare.outcome == "200 1000")
            #expect(SmoothAuth.nullKeys(bare.result) == ["deviceToken", "type"])
        }
    }

    @Test("POST /refresh: an expired access token and the refresh token give a new access token as a sign-in result; 2101, 2102, 2104 otherwise")
    func refresh() async throws {
        try await Stack.run(services: [.auth], gateway: ["GATEWAY_PUBLIC_URL": "https://smooth.example.org"]) { s in
            let email = SmoothAuth.email()
            _ = try await SmoothAuth.signUp(s, email: email, name: SmoothAuth.name())
            let signedIn = try #require(
                try await s.smooth(.post, "/auth-server/sign-in", json: #"{"email":"\#(email)","password":"password1","type":"ios"}"#).result)
            let refreshToken = try #require(signedIn["refreshToken"] as? String)
            let db = try #require(s.databases["auth"])
            var userId: UUID?
            for try await id in try await db.query("SELECT id FROM users WHERE email = \(email)").decode(UUID.self) { userId = id }
            let expired = try await s.expiredToken(for: try #require(userId).uuidString.lowercased())
            func refresh(_ access: String?, _ refresh: String?) async throws -> SmoothAnswer {
                var headers = s.smoothHeaders(token: access, contentType: nil)
                if let refresh { headers[HTTPField.Name("REFRESH-TOKEN")!] = refresh }
                return SmoothAnswer(response: try await s.client.execute(uri: "/auth-server/refresh", method: .post, headers: headers, body: nil))
            }

            let answer = try await refresh(expired, refreshToken)
            #expect(answer.outcome == "200 1000", "\(answer.body)")
            let result = try #require(answer.result)
            #expect(SmoothAuth.keys(result) == ["accessToken", "code", "deviceToken", "email", "id", "name", "refreshToken", "type", "url"])
            #expect(result["id"] as? Int == signedIn["id"] as? Int && result["email"] as? String == email)
            #expect(result["refreshToken"] as? String == refreshToken && result["url"] as? String == "https://smooth.example.org")
            #expect(SmoothAuth.nullKeys(result) == ["deviceToken", "type"])
            let fresh = try #require(result["accessToken"] as? String)
            #expect(fresh != expired)
            let info = try await s.client.execute(
                uri: "/auth-server/auth/info", method: .get, headers: s.smoothHeaders(token: fresh, contentType: nil), body: nil)
            #expect(info.status == .ok)
            // A still-valid access token works too (Smooth's server did not refuse it).
            #expect(try await refresh(fresh, refreshToken).outcome == "200 1000")

            // Refusals: no access token, a forged one, a missing, wrong or another user's refresh token.
            #expect(try await refresh(nil, refreshToken).outcome == "400 2101")
            #expect(try await refresh(expired + "x", refreshToken).outcome == "400 2102")
            #expect(try await refresh("not.a.jwt", refreshToken).outcome == "400 2102")
            #expect(try await refresh(expired, nil).outcome == "400 2104")
            #expect(try await refresh(expired, "wrong").outcome == "400 2104")
            #expect(try await refresh(expired, String(repeating: "a", count: 600)).outcome == "400 2104")
            let otherEmail = SmoothAuth.email()
            _ = try await SmoothAuth.signUp(s, email: otherEmail, name: SmoothAuth.name())
            let other = try #require(
                try await s.smooth(.post, "/auth-server/sign-in", json: #"{"email":"\#(otherEmail)","password":"password1"}"#).result)
            #expect(try await refresh(expired, try #require(other["refreshToken"] as? String)).outcome == "400 2104")
        }
    }

    @Test("without a configured public URL, url is http:// + the Host the app used")
    func signInURLFromHost() async throws {
        try await Stack.run(services: [.auth]) { s in
            let email = SmoothAuth.email()
            _ = try await SmoothAuth.signUp(s, email: email, name: SmoothAuth.name())
            let answer = try await s.smooth(.post, "/auth-server/sign-in", json: #"{"email":"\#(email)","password":"password1","type":"ios","deviceToken":""}"#)
            let url = try #require(answer.result?["url"] as? String)
            #expect(url.hasPrefix("http://"), "\(url)")
            #expect(answer.result?["deviceToken"] is NSNull, "an empty device token is none")
        }
    }

    @Test("sign-in refusals: wrong password and unknown email are both 2213; missing fields and malformed JSON 2100")
    func signInRefusals() async throws {
        try await Stack.run(services: [.auth]) { s in
            let email = SmoothAuth.email()
            _ = try await SmoothAuth.signUp(s, email: email, name: SmoothAuth.name())
            let wrong = try await s.smooth(.post, "/auth-server/sign-in", json: #"{"email":"\#(email)","password":"password2","type":"ios"}"#)
            let unknown = try await s.smooth(.post, "/auth-server/sign-in", json: #"{"email":"nobody@example.com","password":"password1","type":"ios"}"#)
            #expect(wrong.outcome == "400 2213" && unknown.outcome == "400 2213")
            #expect(
                wrong.envelope?["message"] as? String == unknown.envelope?["message"] as? String
                    && SmoothAuth.keys(wrong.envelope) == SmoothAuth.keys(unknown.envelope),
                "no account enumeration: the same answer")
            for body in [#"{"email":"\#(email)"}"#, #"{"password":"password1"}"#, #"{"email":"\#(email)","password":""}"#, "{not json", ""] {
                let answer = try await s.smooth(.post, "/auth-server/sign-in", json: body)
                #expect(answer.outcome == "400 2100", "\(body) → \(answer.status) \(answer.body)")
            }
        }
    }

    @Test("unknown paths under /auth-server answer the envelope, not the suite's error")
    func unknownRoute() async throws {
        try await Stack.run(services: [.auth]) { s in
            let user = try await s.smoothUser()
            let answer = try await s.smooth(.get, "/auth-server/auth/nothing-here", user)
            #expect(answer.envelope?["isSuccess"] as? Bool == false && answer.code == 2100, "\(answer.status) \(answer.body)")
        }
    }
}
