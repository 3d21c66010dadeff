import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SuiteTesting
import Testing

/// Account texts are bounded in UTF-8 bytes as well as in characters (four bytes per character).
@Suite("Byte limits on account texts")
struct AccountTextLimitTests {
    /// `base` followed by `marks` combining acute accents (2 bytes each): one character.
    static func accented(_ base: String, _ marks: Int) -> String {
        base + String(repeating: "\u{0301}", count: marks)
    }

    static func joinBody(
        email: String = "u\(UUID().uuidString.prefix(8))@example.com", password: String = "secret123",
        nickname: String = "새싹"
    ) -> String {
        #"{"email":"\#(email)","password":"\#(password)","nickname":"\#(nickname)","phone":"01012345678"}"#
    }

    @Test("nickname (120 bytes), email (1 016), password (256), device token (16 384), friend name: over is E11, never stored")
    func accountTexts() async throws {
        try await Stack.run { s in
            // Join: each field one character (or a few) long but over its byte limit.
            let longNickname = Self.accented("a", 60)  // 121 bytes
            #expect(outcome(try await s.request(.post, "/v1/users/join", json: Self.joinBody(nickname: longNickname))) == "400 E11")
            #expect(outcome(try await s.request(.post, "/v1/users/join", json: Self.joinBody(email: Self.accented("e", 600) + "@example.com"))) == "400 E11")
            #expect(
                outcome(try await s.request(.post, "/v1/users/validation/email", json: #"{"email":"\#(Self.accented("e", 600))@example.com"}"#)) == "400 E11")
            #expect(outcome(try await s.request(.post, "/v1/users/join", json: Self.joinBody(password: Self.accented("secret12", 125)))) == "400 E11")
            // At the limits: 30 Hangul syllables, 119 bytes of one character.
            #expect(outcome(try await s.request(.post, "/v1/users/join", json: Self.joinBody(nickname: String(repeating: "가", count: 30)))) == "200")
            #expect(outcome(try await s.request(.post, "/v1/users/join", json: Self.joinBody(nickname: Self.accented("b", 59)))) == "200")

            let user = try await s.join()
            let token = user.token.accessToken
            #expect(
                outcome(try await s.request(.put, "/v1/users/me", token: token, json: #"{"nickname":"\#(longNickname)","phone":"01012345678"}"#)) == "400 E11")
            let me = try #require(jsonObject(try await s.request(.get, "/v1/users/me", token: token)))
            #expect(me["nickname"] as? String == user.nickname)
            #expect(
                outcome(try await s.request(.put, "/v1/users/deviceToken", token: token, json: #"{"deviceToken":"\#(Self.accented("t", 8_192))"}"#))
                    == "400 E11")
            #expect(
                outcome(try await s.request(.put, "/v1/users/deviceToken", token: token, json: #"{"deviceToken":"\#(Self.accented("t", 8_191))"}"#)) == "200")
            #expect(outcome(try await s.request(.post, "/v1/friends", token: token, json: #"{"name":"\#(longNickname)","code":"0001"}"#)) == "400 E11")
        }
    }

    /// PostgreSQL text cannot hold NUL: a NUL in any client text is E11 (found by the fuzzer on
    /// the friend-request name, which answered 500).
    @Test("a NUL character in a nickname, profile edit or friend-request name is E11; the service keeps answering")
    func nulCharacters() async throws {
        try await Stack.run { s in
            let nul = #"a\u0000b"#
            #expect(outcome(try await s.request(.post, "/v1/users/join", json: Self.joinBody(nickname: nul))) == "400 E11")
            let user = try await s.user()
            #expect(outcome(try await s.send(.put, "/v1/users/me", user, json: #"{"nickname":"\#(nul)","phone":"01012345678"}"#)) == "400 E11")
            #expect(outcome(try await s.send(.post, "/v1/friends", user, json: #"{"name":"\#(nul)","code":"1234"}"#)) == "400 E11")
            // A Kakao token with control bytes cannot go into a header: E11, not a 503 from the HTTP client.
            #expect(outcome(try await s.request(.post, "/v1/users/login/kakao", json: #"{"oauthToken":"a\u0001b","deviceToken":"d"}"#)) == "400 E11")
            #expect(try await s.get("/v1/users/me", user).status == .ok)
        }
    }
}
