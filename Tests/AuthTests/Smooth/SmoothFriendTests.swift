import Foundation
import HTTPTypes
import PostgresNIO
import SuiteTesting
import Testing

/// `/auth-server/auth/friend` and `/auth/ban-friend`: the suite's friendship rules with Smooth's
/// integer ids and states.
@Suite("Smooth /auth-server: friends", .serialized)
struct SmoothFriendTests {
    static func list(_ s: Stack, _ user: Stack.SmoothUser) async throws -> [[String: Any]] {
        let answer = try await s.smooth(.get, "/auth-server/auth/friend", user)
        #expect(answer.outcome == "200 1000", "\(answer.body)")
        return try #require(answer.resultArray, "result is a bare array: \(answer.body)")
    }

    static func request(_ s: Stack, _ from: Stack.SmoothUser, to: Stack.SmoothUser) async throws -> SmoothAnswer {
        try await s.smooth(.post, "/auth-server/auth/friend", from, json: #"{"name":"\#(to.name)","code":"\#(to.code)"}"#)
    }

    static func states(_ list: [[String: Any]]) -> [Int: String] {
        Dictionary(uniqueKeysWithValues: list.compactMap { f in (f["userId"] as? Int).map { ($0, f["state"] as? String ?? "") } })
    }

    /// FriendshipChanged events in auth's outbox for one friendship, as "user-alias state".
    static func changes(_ s: Stack) async throws -> [String] {
        let db = try #require(s.databases["auth"])
        var out: [String] = []
        for try await json in try await db.query(
            "SELECT convert_from(payload, 'UTF8') FROM outbox WHERE event_type = 'auth.friendship.changed' ORDER BY id"
        ).decode(String.self) {
            let data = try #require((try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])?["data"] as? [String: Any])
            out.append(data["state"] as? String ?? "")
        }
        return out
    }

    @Test("GET is [{id, userId, name, code, state}] (+profileImage once set); REQUEST for the asker, WAIT for the asked; accept, ban, delete")
    func lifecycle() async throws {
        try await Stack.run(services: [.auth]) { s in
            let alice = try await s.smoothUser()
            let bob = try await s.smoothUser()
            #expect(try await Self.list(s, alice).isEmpty)

            let sent = try await Self.request(s, alice, to: bob)
            #expect(sent.outcome == "200 1000" && sent.envelope?["result"] == nil, "\(sent.body)")
            let mine = try await Self.list(s, alice)
            #expect(mine.count == 1)
            #expect(SmoothAuth.keys(mine.first) == ["code", "id", "name", "state", "userId"])
            #expect(mine.first?["userId"] as? Int == bob.id && mine.first?["name"] as? String == bob.name && mine.first?["code"] as? String == bob.code)
            #expect(mine.first?["state"] as? String == "REQUEST")
            let friendship = try #require(mine.first?["id"] as? Int)
            #expect(friendship != bob.id && friendship >= 1)
            let theirs = try await Self.list(s, bob)
            #expect(theirs.first?["id"] as? Int == friendship && theirs.first?["userId"] as? Int == alice.id)
            #expect(theirs.first?["state"] as? String == "WAIT")

            // Only the asked side accepts (2103 for the asker); asking twice is refused.
            #expect(try await s.smooth(.patch, "/auth-server/auth/friend?id=\(friendship)", alice).outcome == "400 2103")
            #expect(try await Self.request(s, alice, to: bob).outcome == "400 2100")
            #expect(try await s.smooth(.patch, "/auth-server/auth/friend?id=\(friendship)", bob).outcome == "200 1000")
            #expect(Self.states(try await Self.list(s, alice)) == [bob.id: "ACCEPT"])
            #expect(Self.states(try await Self.list(s, bob)) == [alice.id: "ACCEPT"])

            // A profile image shows as an absolute URL.
            #expect(
                try await s.smoothMultipart(.post, "/auth-server/auth/profile", bob, fields: [:], file: pngBytes, contentType: "image/png").outcome
                    == "200 1000")
            let withImage = try await Self.list(s, alice)
            #expect(SmoothAuth.keys(withImage.first) == ["code", "id", "name", "profileImage", "state", "userId"])
            #expect((withImage.first?["profileImage"] as? String)?.contains("/auth-server/static/profiles/") == true)

            // Ban: the banner sees BAN, the banned side nothing, and cannot ask again.
            #expect(try await s.smooth(.patch, "/auth-server/auth/ban-friend?id=\(friendship)", alice).outcome == "200 1000")
            #expect(Self.states(try await Self.list(s, alice)) == [bob.id: "BAN"])
            #expect(try await Self.list(s, bob).isEmpty)
            #expect(try await Self.request(s, bob, to: alice).outcome == "400 2111")
            #expect(try await s.smooth(.delete, "/auth-server/auth/friend?id=\(friendship)", bob).outcome == "400 2170")

            // Delete by the banner clears it.
            #expect(try await s.smooth(.delete, "/auth-server/auth/friend?id=\(friendship)", alice).outcome == "200 1000")
            #expect(try await Self.list(s, alice).isEmpty)
            #expect(try await s.smooth(.delete, "/auth-server/auth/friend?id=\(friendship)", alice).outcome == "400 2170")
            #expect(try await Self.changes(s) == ["requested", "requested", "accepted", "accepted", "banned", "banned", "removed", "removed"])
        }
    }

    @Test("a request back accepts; a refusal (DELETE by the asked side) removes the request")
    func mutualAndRefuse() async throws {
        try await Stack.run(services: [.auth]) { s in
            let a = try await s.smoothUser()
            let b = try await s.smoothUser()
            let c = try await s.smoothUser()
            #expect(try await Self.request(s, a, to: b).outcome == "200 1000")
            #expect(try await Self.request(s, b, to: a).outcome == "200 1000")
            #expect(Self.states(try await Self.list(s, a)) == [b.id: "ACCEPT"])

            #expect(try await Self.request(s, c, to: a).outcome == "200 1000")
            let waiting = try #require(try await Self.list(s, a).first { $0["userId"] as? Int == c.id }?["id"] as? Int)
            #expect(try await s.smooth(.delete, "/auth-server/auth/friend?id=\(waiting)", a).outcome == "200 1000")
            #expect(try await Self.list(s, c).isEmpty)
            #expect(Self.states(try await Self.list(s, a)) == [b.id: "ACCEPT"])
        }
    }

    @Test("another user's token cannot accept, ban or delete someone else's friendship (2170); bad input 2100; unknown tag 2111; no token 401")
    func refusals() async throws {
        try await Stack.run(services: [.auth]) { s in
            let a = try await s.smoothUser()
            let b = try await s.smoothUser()
            let mallory = try await s.smoothUser()
            #expect(try await Self.request(s, a, to: b).outcome == "200 1000")
            let friendship = try #require(try await Self.list(s, b).first?["id"] as? Int)
            for (method, path) in [(HTTPRequest.Method.patch, "friend"), (.patch, "ban-friend"), (.delete, "friend")] {
                let answer = try await s.smooth(method, "/auth-server/auth/\(path)?id=\(friendship)", mallory)
                #expect(answer.outcome == "400 2170", "\(method) \(path): \(answer.body)")
            }
            #expect(Self.states(try await Self.list(s, b)) == [a.id: "WAIT"], "untouched")

            for query in ["", "?id=", "?id=abc", "?id=0", "?id=99999999999999999999"] {
                #expect(try await s.smooth(.patch, "/auth-server/auth/friend\(query)", b).outcome == "400 2100", "\(query)")
            }
            #expect(try await s.smooth(.patch, "/auth-server/auth/friend?id=\(friendship == 1 ? 2 : friendship - 1)", b).outcome == "400 2170")
            for body in [#"{"name":"\#(a.name)"}"#, #"{"name":"\#(a.name)","code":"12a4"}"#, #"{"code":"1234"}"#, "{oops", #"{"name":"","code":"1234"}"#] {
                #expect(try await s.smooth(.post, "/auth-server/auth/friend", a, json: body).outcome == "400 2100", "\(body)")
            }
            #expect(try await s.smooth(.post, "/auth-server/auth/friend", a, json: #"{"name":"\#(a.name)","code":"\#(a.code)"}"#).outcome == "400 2100")
            let nobody = try await s.smooth(.post, "/auth-server/auth/friend", a, json: #"{"name":"nobody-here","code":"0000"}"#)
            #expect(nobody.outcome == "400 2111")
            let anonymous = try await s.smooth(.get, "/auth-server/auth/friend")
            #expect(anonymous.status == .unauthorized && anonymous.body.isEmpty)
        }
    }
}
