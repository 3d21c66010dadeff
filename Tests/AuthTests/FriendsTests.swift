import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SuiteTesting
import Testing

@Suite("Friends (Discord-style)", .serialized)
struct FriendsTests {
    func tag(_ s: Stack, _ token: String) async throws -> (name: String, code: String) {
        let me = try #require(jsonObject(try await s.request(.get, "/v1/friends/me", token: token)))
        return (try #require(me["name"] as? String), try #require(me["code"] as? String))
    }

    func states(_ s: Stack, _ token: String) async throws -> [String: String] {
        let r = try await s.request(.get, "/v1/friends", token: token)
        let list = try #require(try JSONSerialization.jsonObject(with: Data(String(buffer: r.body).utf8)) as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: list.compactMap { f in (f["user_id"] as? String).map { ($0, f["state"] as? String ?? "") } })
    }

    @Test("request by name#code, WAIT/REQUEST, accept, ban hides, delete")
    func lifecycle() async throws {
        try await Stack.run { s in
            let alice = try await s.join(nickname: "alice")
            let bob = try await s.join(nickname: "bob")
            let bobTag = try await tag(s, bob.token.accessToken)
            #expect(bobTag.code.count == 4)

            let sent = try await s.request(.post, "/v1/friends", token: alice.token.accessToken, json: #"{"name":"BOB","code":"\#(bobTag.code)"}"#)
            #expect(sent.status == .ok && jsonObject(sent)?["state"] as? String == "REQUEST")
            let friendshipId = try #require(jsonObject(sent)?["id"] as? String)
            #expect(friendshipId == friendshipId.lowercased(), "ids are lower-case on the wire")
            #expect(try await states(s, alice.token.accessToken) == [bob.user_id: "REQUEST"])
            #expect(try await states(s, bob.token.accessToken) == [alice.user_id: "WAIT"])

            // Only the invited side accepts; asking twice is a duplicate.
            #expect(errorCode(try await s.request(.patch, "/v1/friends/\(friendshipId)", token: alice.token.accessToken)) == "E14")
            #expect(
                errorCode(try await s.request(.post, "/v1/friends", token: alice.token.accessToken, json: #"{"name":"bob","code":"\#(bobTag.code)"}"#)) == "E12"
            )
            let accepted = try await s.request(.patch, "/v1/friends/\(friendshipId)", token: bob.token.accessToken)
            #expect(jsonObject(accepted)?["state"] as? String == "ACCEPT")
            #expect(try await states(s, alice.token.accessToken) == [bob.user_id: "ACCEPT"])

            // Ban: the banner sees BAN, the banned side no longer sees the friendship.
            let banned = try await s.request(.patch, "/v1/friends/\(friendshipId)/ban", token: alice.token.accessToken)
            #expect(jsonObject(banned)?["state"] as? String == "BAN")
            #expect(try await states(s, bob.token.accessToken).isEmpty)
            let aliceTag = try await tag(s, alice.token.accessToken)
            #expect(
                errorCode(try await s.request(.post, "/v1/friends", token: bob.token.accessToken, json: #"{"name":"alice","code":"\#(aliceTag.code)"}"#))
                    == "E13")

            // Delete (refuse/remove) by the banner clears it.
            #expect(try await s.request(.delete, "/v1/friends/\(friendshipId)", token: alice.token.accessToken).status == .ok)
            #expect(try await states(s, alice.token.accessToken).isEmpty)
        }
    }

    @Test("mutual requests become friends; bad input E11, unknown tag E13, self E11, strangers cannot touch a friendship")
    func edges() async throws {
        try await Stack.run { s in
            let a = try await s.join(nickname: "amy")
            let b = try await s.join(nickname: "ben")
            let c = try await s.join(nickname: "cat")
            let aTag = try await tag(s, a.token.accessToken)
            let bTag = try await tag(s, b.token.accessToken)
            let first = try await s.request(.post, "/v1/friends", token: a.token.accessToken, json: #"{"name":"ben","code":"\#(bTag.code)"}"#)
            let id = try #require(jsonObject(first)?["id"] as? String)
            let mutual = try await s.request(.post, "/v1/friends", token: b.token.accessToken, json: #"{"name":"amy","code":"\#(aTag.code)"}"#)
            #expect(jsonObject(mutual)?["state"] as? String == "ACCEPT")
            #expect(errorCode(try await s.request(.post, "/v1/friends", token: a.token.accessToken, json: #"{"name":"ben"}"#)) == "E11")
            #expect(errorCode(try await s.request(.post, "/v1/friends", token: a.token.accessToken, json: #"{"name":"nobody","code":"0000"}"#)) == "E13")
            #expect(errorCode(try await s.request(.post, "/v1/friends", token: a.token.accessToken, json: #"{"name":"amy","code":"\#(aTag.code)"}"#)) == "E11")
            #expect(errorCode(try await s.request(.delete, "/v1/friends/\(id)", token: c.token.accessToken)) == "E13")
            #expect(errorCode(try await s.request(.patch, "/v1/friends/not-a-uuid", token: c.token.accessToken)) == "E13")
            #expect(try await states(s, a.token.accessToken) == [b.user_id: "ACCEPT"])
        }
    }
}
