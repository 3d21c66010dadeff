import Foundation
import HTTPTypes
import PostgresNIO
import Testing

extension Stack {
    /// Signs a new user up and in through `/auth-server`, as Smooth's app does (no email
    /// verification: its server never required one), and waits until the running workspace
    /// and chat projections know the user.
    public func smoothUser(
        name: String = "u\(UUID().uuidString.prefix(8).lowercased())", email: String = "smooth\(UUID().uuidString.prefix(8))@example.com",
        password: String = "password1", deviceToken: String? = nil
    ) async throws -> SmoothUser {
        let signUp = try await smooth(.post, "/auth-server/sign-up", json: #"{"email":"\#(email)","password":"\#(password)","name":"\#(name)"}"#)
        #expect(signUp.outcome == "200 1000", "Smooth sign-up: \(signUp.body)")
        let device = deviceToken.map { #""\#($0)""# } ?? "null"
        let signIn = try await smooth(
            .post, "/auth-server/sign-in", json: #"{"email":"\#(email)","password":"\#(password)","type":"ios","deviceToken":\#(device)}"#)
        #expect(signIn.outcome == "200 1000", "Smooth sign-in: \(signIn.body)")
        let result = try #require(signIn.result)
        let user = SmoothUser(
            id: try #require(result["id"] as? Int), email: email, name: try #require(result["name"] as? String),
            code: try #require(result["code"] as? String), token: try #require(result["accessToken"] as? String))
        if let auth = databases["auth"] {
            for try await id in try await auth.query("SELECT id FROM users WHERE alias = \(Int64(user.id))").decode(UUID.self) {
                try await waitForProfile(id.uuidString.lowercased())
            }
        }
        return user
    }
}

extension Stack {
    /// A /v1 user's integer alias (auth's `users.alias`), what Smooth's surfaces name them by.
    public func userAlias(_ userId: String) async throws -> Int64 {
        let auth = try #require(databases["auth"])
        let id = try #require(UUID(uuidString: userId))
        var found: Int64?
        for try await alias in try await auth.query("SELECT alias FROM users WHERE id = \(id)").decode(Int64.self) { found = alias }
        return try #require(found, "no user \(userId)")
    }

    /// A channel's integer alias, once chat has it from workspace.v1.
    public func channelAlias(_ channel: String) async throws -> Int64 {
        let db = try #require(chatDatabase)
        let id = try #require(UUID(uuidString: channel))
        var alias: Int64?
        try await eventually("chat knows the channel's alias", timeout: .seconds(30)) {
            for try await value in try await db.query("SELECT alias FROM channels WHERE id = \(id)").decode(Int64?.self) { alias = value }
            return alias != nil
        }
        return try #require(alias)
    }
}

extension Stack {
    /// `a` asks `b` by name#code and `b` accepts (Smooth's friend endpoints); waits until chat's
    /// projection knows both sides of the friendship (personal rooms are opened between friends).
    public func befriend(_ a: SmoothUser, _ b: SmoothUser) async throws {
        #expect(try await smooth(.post, "/auth-server/auth/friend", a, json: #"{"name":"\#(b.name)","code":"\#(b.code)"}"#).outcome == "200 1000")
        let pending = try #require(try await smooth(.get, "/auth-server/auth/friend", b).resultArray)
        let friendship = try #require(pending.first { $0["userId"] as? Int == a.id }?["id"] as? Int)
        #expect(try await smooth(.patch, "/auth-server/auth/friend?id=\(friendship)", b).outcome == "200 1000")
        let chat = try #require(chatDatabase)
        try await eventually("chat knows the friendship") {
            var rows = 0
            for try await _ in try await chat.query(
                """
                SELECT 1 FROM friendships f JOIN user_profiles p ON p.user_id = f.user_id JOIN user_profiles q ON q.user_id = f.friend_id
                WHERE f.state = 'accepted' AND ((p.alias = \(Int64(a.id)) AND q.alias = \(Int64(b.id))) OR (p.alias = \(Int64(b.id)) AND q.alias = \(Int64(a.id))))
                """)
            {
                rows += 1
            }
            return rows == 2
        }
    }

    /// A Smooth user as `/v1` names them (their UUID), with the same token.
    public func v1User(_ user: SmoothUser) async throws -> User {
        let auth = try #require(databases["auth"])
        for try await id in try await auth.query("SELECT id FROM users WHERE alias = \(Int64(user.id))").decode(UUID.self) {
            return User(id: id.uuidString.lowercased(), email: user.email, token: user.token)
        }
        Issue.record("no user with alias \(user.id)")
        throw CancellationError()
    }
}
