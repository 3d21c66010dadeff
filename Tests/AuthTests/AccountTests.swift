import AccessTokens
import Common
import Events
import Foundation
import HTTPTypes
import HummingbirdTesting
import Kafka
import NIOCore
import ServiceKit
import SuiteTesting
import Testing
import TestSupport

@Suite("Accounts through the gateway", .serialized)
struct AccountTests {
    @Test("email validation: format E11, duplicate E12, JSON and form bodies")
    func emailValidation() async throws {
        try await Stack.run { s in
            let free = try await s.request(.post, "/v1/users/validation/email", json: #"{"email":"new@example.com"}"#)
            #expect(free.status == .ok)
            #expect(errorCode(try await s.request(.post, "/v1/users/validation/email", json: #"{"email":"not-an-email"}"#)) == "E11")
            #expect(errorCode(try await s.request(.post, "/v1/users/validation/email", json: #"{}"#)) == "E11")
            #expect(errorCode(try await s.request(.post, "/v1/users/validation/email", json: "{oops")) == "E11")
            _ = try await s.join(email: "Taken@Example.com")
            #expect(errorCode(try await s.request(.post, "/v1/users/validation/email", json: #"{"email":"taken@example.com"}"#)) == "E12")
            #expect(errorCode(try await s.form("/v1/users/validation/email", "email=taken%40example.com")) == "E12")
            #expect(try await s.form("/v1/users/validation/email", "email=other%40example.com").status == .ok)
        }
    }

    @Test("join: auth result with tokens; duplicate E12 (case-insensitive); invalid input E11; form body")
    func join() async throws {
        try await Stack.run { s in
            let response = try await s.request(
                .post, "/v1/users/join", json: #"{"email":"a@example.com","password":"secret123","nickname":"새싹","phone":"01012345678","deviceToken":"abc"}"#)
            #expect(response.status == .ok)
            try expectContractDates(response)
            let result = try decode(AuthResultBody.self, response)
            #expect(result.email == "a@example.com" && result.nickname == "새싹")
            #expect(UUID(uuidString: result.user_id) != nil && result.user_id == result.user_id.lowercased())
            #expect(!result.token.accessToken.isEmpty && !result.token.refreshToken.isEmpty)

            let dup = try await s.request(.post, "/v1/users/join", json: #"{"email":"A@EXAMPLE.com","password":"secret123","nickname":"x"}"#)
            #expect(dup.status == .badRequest && errorCode(dup) == "E12")
            for bad in [
                #"{"email":"b@example.com","password":"short1","nickname":"x"}"#,
                #"{"email":"b@example.com","password":"longenoughbutnodigit","nickname":"x"}"#,
                #"{"email":"b@example.com","password":"secret123","nickname":"   "}"#,
                #"{"email":"b@example","password":"secret123","nickname":"x"}"#,
                #"{"email":"b@example.com","password":"secret123","nickname":"x","phone":"call me"}"#,
                #"{"password":"secret123","nickname":"x"}"#,
            ] {
                #expect(errorCode(try await s.request(.post, "/v1/users/join", json: bad)) == "E11", "\(bad)")
            }
            let viaForm = try await s.form("/v1/users/join", "email=form%40example.com&password=secret123&nickname=%EC%83%88%EC%8B%B9&phone=")
            #expect(viaForm.status == .ok)
            #expect(try decode(AuthResultBody.self, viaForm).nickname == "새싹")
        }
    }

    @Test("login: success, and E03 for a wrong password or an unknown email alike")
    func login() async throws {
        try await Stack.run { s in
            _ = try await s.join(email: "login@example.com", password: "right pass 1")
            let ok = try await s.request(.post, "/v1/users/login", json: #"{"email":"login@example.com","password":"right pass 1","deviceToken":"fcm-token"}"#)
            #expect(ok.status == .ok)
            try expectContractDates(ok)
            let wrong = try await s.request(.post, "/v1/users/login", json: #"{"email":"login@example.com","password":"wrong pass 1"}"#)
            let unknown = try await s.request(.post, "/v1/users/login", json: #"{"email":"nobody@example.com","password":"wrong pass 1"}"#)
            #expect(wrong.status == .badRequest && errorCode(wrong) == "E03")
            #expect(unknown.status == .badRequest && errorCode(unknown) == "E03")
            #expect(String(buffer: wrong.body) == String(buffer: unknown.body), "no user enumeration")
            #expect(errorCode(try await s.form("/v1/users/login", "email=login%40example.com&password=right+pass+1")) == nil)
        }
    }

    @Test("me, profile edit and member lookup; every date in the contract format")
    func profile() async throws {
        try await Stack.run { s in
            let user = try await s.join(nickname: "first")
            let me = try await s.request(.get, "/v1/users/me", token: user.token.accessToken)
            #expect(me.status == .ok)
            try expectContractDates(me)
            let meObject = try #require(jsonObject(me))
            #expect(meObject["sesacCoin"] as? Int == 0)
            #expect(meObject["user_id"] as? String == user.user_id)

            let edited = try await s.request(.put, "/v1/users/me", token: user.token.accessToken, json: #"{"nickname":"second","phone":"010-0000-1111"}"#)
            #expect(edited.status == .ok)
            try expectContractDates(edited)
            let editedObject = try #require(jsonObject(edited))
            #expect(editedObject["nickname"] as? String == "second" && editedObject["sesacCoin"] == nil)
            #expect(errorCode(try await s.request(.put, "/v1/users/me", token: user.token.accessToken, json: #"{"nickname":""}"#)) == "E11")

            let other = try await s.join(nickname: "other")
            let member = try await s.request(.get, "/v1/users/\(other.user_id)", token: user.token.accessToken)
            #expect(member.status == .ok)
            let memberObject = try #require(jsonObject(member))
            #expect(Set(memberObject.keys) == ["user_id", "email", "nickname"])
            #expect(errorCode(try await s.request(.get, "/v1/users/\(UUIDv7.generate().lowercased)", token: user.token.accessToken)) == "E03")
            #expect(errorCode(try await s.request(.get, "/v1/users/not-a-uuid", token: user.token.accessToken)) == "E03")
        }
    }

    @Test("refresh: E04 while valid, new token once expired, E06 after logout or for a foreign token, E02 when tampered")
    func refresh() async throws {
        try await Stack.run { s in
            let user = try await s.join()
            func refresh(_ access: String, _ refreshToken: String) async throws -> TestResponse {
                var h = s.headers(token: access, contentType: nil)
                h[Stack.refreshHeader] = refreshToken
                return try await s.request(.get, "/v1/auth/refresh", headers: h)
            }
            #expect(errorCode(try await refresh(user.token.accessToken, user.token.refreshToken)) == "E04")
            let expired = try await s.expiredToken(for: user.user_id)
            // The edge answers E05 (HTTP 400) for an expired token on a protected route.
            let stale = try await s.request(.get, "/v1/users/me", token: expired)
            #expect(stale.status == .badRequest && errorCode(stale) == "E05")
            let refreshed = try await refresh(expired, user.token.refreshToken)
            #expect(refreshed.status == .ok, "\(String(buffer: refreshed.body))")
            let newAccess = try #require((jsonObject(refreshed))?["accessToken"] as? String)
            #expect(try await s.request(.get, "/v1/users/me", token: newAccess).status == .ok)

            // Another user's refresh token, or a made-up one: E06.
            let other = try await s.join()
            #expect(errorCode(try await refresh(expired, other.token.refreshToken)) == "E06")
            #expect(errorCode(try await refresh(expired, "made-up")) == "E06")
            // A tampered access token: E02.
            #expect(errorCode(try await refresh(expired + "x", user.token.refreshToken)) == "E02")

            // Logout (either verb) revokes refresh tokens.
            #expect(try await s.request(.post, "/v1/users/logout", token: newAccess).status == .ok)
            #expect(errorCode(try await refresh(expired, user.token.refreshToken)) == "E06")
            #expect(try await s.request(.get, "/v1/users/logout", token: newAccess).status == .ok)
        }
    }

    @Test("device token: PUT and POST store it; missing token E11")
    func deviceToken() async throws {
        try await Stack.run { s in
            let user = try await s.join()
            #expect(try await s.request(.put, "/v1/users/deviceToken", token: user.token.accessToken, json: #"{"deviceToken":"apns-hex"}"#).status == .ok)
            #expect(try await s.request(.post, "/v1/users/deviceToken", token: user.token.accessToken, json: #"{"deviceToken":"fcm"}"#).status == .ok)
            #expect(errorCode(try await s.request(.put, "/v1/users/deviceToken", token: user.token.accessToken, json: #"{}"#)) == "E11")
        }
    }

    @Test("auth.user.v1 carries registered and profile-updated CloudEvents keyed by user id")
    func events() async throws {
        try await Stack.run { s in
            let user = try await s.join(nickname: "evented")
            _ = try await s.request(.put, "/v1/users/me", token: user.token.accessToken, json: #"{"nickname":"renamed"}"#)
            let consumer = try TestKafka.groupConsumer(s.cluster, group: "test-\(UUID())", topics: [Topic.authUser.name])
            let messages = try await withTimeout(.seconds(30), "auth events") {
                var out: [KafkaConsumerMessage] = []
                for try await m in consumer.messages where m.keyString == user.user_id {
                    out.append(m)
                    if out.count == 2 { break }
                }
                return out
            }
            await consumer.close()
            let registered = try EventCoding.decode(AuthEvents.UserRegistered.self, from: messages[0].value ?? [])
            #expect(registered.source == "auth" && registered.subject == user.user_id && registered.data.nickname == "evented")
            #expect(messages[0].header("ce_type") == Array("auth.user.registered".utf8))
            let updated = try EventCoding.decode(AuthEvents.UserProfileUpdated.self, from: messages[1].value ?? [])
            #expect(updated.data.nickname == "renamed")
            #expect(messages[0].partition == messages[1].partition, "same key, same partition, in order")
        }
    }
}
