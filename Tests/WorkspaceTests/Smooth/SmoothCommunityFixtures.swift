import Common
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing

/// Smooth users and communities for the `/community-server` tests, through the gateway.
struct SmoothFixture {
    let s: Stack

    /// A Smooth user and their suite id (a UUID, for database checks).
    struct Member {
        let smooth: Stack.SmoothUser
        let uuid: UUID
        var id: Int { smooth.id }
    }

    /// A user joined through auth's `/v1/users/join`. Its integer id and tag come from auth's
    /// events once auth publishes them; until then the test gives the workspace projection some
    /// (only where none arrived), as the events would.
    func user(_ nickname: String = "새싹이") async throws -> Member {
        let user = try await s.user(nickname)
        let uuid = try #require(UUID(uuidString: user.id))
        let db = try #require(s.workspaceDatabase)
        let alias = Int64.random(in: 1...9_007_199_254_740_991)
        let code = String(format: "%04d", Int.random(in: 0...9999))
        var assigned: (Int64, String)?
        for try await row in try await db.query(
            """
            UPDATE user_profiles SET alias = coalesce(alias, \(alias)), user_code = coalesce(user_code, \(code))
            WHERE user_id = \(uuid) RETURNING alias, user_code
            """
        ).decode((Int64, String).self) {
            assigned = row
        }
        let (id, tag) = try #require(assigned)
        return Member(smooth: Stack.SmoothUser(id: Int(id), email: user.email, name: nickname, code: tag, token: user.token), uuid: uuid)
    }

    /// A user whose integer id and tag have not arrived from auth (null in the projection), as
    /// for a profile projected from an event written before aliases existed: auth now sends them
    /// for every user, so the test clears them in workspace's projection.
    func userWithoutAlias() async throws -> Member {
        let user = try await s.user()
        let db = try #require(s.workspaceDatabase)
        let id = try #require(UUID(uuidString: user.id))
        _ = try await db.query("UPDATE user_profiles SET alias = NULL, user_code = NULL WHERE user_id = \(id)")
        return Member(
            smooth: Stack.SmoothUser(id: 0, email: user.email, name: "새싹이", code: "", token: user.token), uuid: try #require(UUID(uuidString: user.id)))
    }

    func smooth(_ method: HTTPRequest.Method, _ uri: String, _ user: Member?, json: String? = nil) async throws -> SmoothAnswer {
        try await s.smooth(method, "/community-server" + uri, user?.smooth, json: json)
    }

    /// Creates a community (multipart, as the iOS client does) and returns its id.
    @discardableResult
    func community(_ owner: Member, name: String = "server-\(UUID().uuidString.prefix(6))", icon: [UInt8]? = nil) async throws -> Int {
        let answer = try await s.smoothMultipart(
            .post, "/community-server/community", owner.smooth, fields: ["name": name, "public": "true"], file: icon, fileField: "icon",
            contentType: "image/png")
        #expect(answer.outcome == "200 1000", "create community: \(answer.body)")
        return try #require(answer.result?["id"] as? Int)
    }

    /// `owner`'s community joined by `others` through an invitation link.
    func shared(_ owner: Member, _ others: Member...) async throws -> Int {
        let community = try await self.community(owner)
        let url = try #require(try await smooth(.post, "/community/invitation", owner, json: #"{"id":\#(community)}"#).result?["url"] as? String)
        for other in others {
            let joined = try await smooth(.post, "/community/member", other, json: #"{"code":"\#(url)"}"#)
            #expect(joined.outcome == "200 1000", "join: \(joined.body)")
        }
        return community
    }

    /// The community's layout as `user` sees it: category name → channel names, in order.
    func layout(_ community: Int, _ user: Member) async throws -> [(category: [String: Any], channels: [[String: Any]])] {
        let answer = try await smooth(.get, "/community/\(community)", user)
        #expect(answer.outcome == "200 1000", "detail: \(answer.body)")
        let categories = try #require(answer.result?["categories"] as? [[String: Any]])
        return categories.map { ($0, $0["channels"] as? [[String: Any]] ?? []) }
    }

    /// Category names in order, each with its channel names.
    func names(_ community: Int, _ user: Member) async throws -> [String] {
        try await layout(community, user).map { entry in
            "\(entry.category["name"] as? String ?? "?"):" + entry.channels.map { $0["name"] as? String ?? "?" }.joined(separator: ",")
        }
    }

    func categoryId(_ community: Int, _ user: Member, named name: String) async throws -> Int {
        try #require(try await layout(community, user).first { $0.category["name"] as? String == name }?.category["id"] as? Int)
    }

    func channelId(_ community: Int, _ user: Member, named name: String, type: String = "TEXT") async throws -> Int {
        let all = try await layout(community, user).flatMap(\.channels)
        return try #require(all.first { $0["name"] as? String == name && $0["type"] as? String == type }?["id"] as? Int)
    }

    /// The suite's id of the community (for database and event checks).
    func uuid(ofCommunity alias: Int) async throws -> UUID {
        let db = try #require(s.workspaceDatabase)
        for try await id in try await db.query("SELECT id FROM workspaces WHERE alias = \(Int64(alias))").decode(UUID.self) { return id }
        throw TimeoutError(what: "community \(alias)")
    }

    /// The channels `user` is a member of in the community (chat's view comes from these).
    func channelMemberships(_ user: Member, community alias: Int) async throws -> Set<Int> {
        let db = try #require(s.workspaceDatabase)
        var result: Set<Int> = []
        for try await channel in try await db.query(
            """
            SELECT c.alias FROM channel_members m JOIN channels c ON c.id = m.channel_id JOIN workspaces w ON w.id = c.workspace_id
            WHERE w.alias = \(Int64(alias)) AND m.user_id = \(user.uuid)
            """
        ).decode(Int64.self) {
            result.insert(Int(channel))
        }
        return result
    }
}

/// The keys of the whole envelope (`result` is absent where the contract shows "–").
func envelopeKeys(_ answer: SmoothAnswer) -> Set<String> {
    Set(answer.envelope.map { Array($0.keys) } ?? [])
}

extension Stack {
    /// Runs auth, workspace and the gateway for the Smooth tests.
    static func smoothCommunities(_ body: @escaping @Sendable (SmoothFixture) async throws -> Void) async throws {
        try await run(services: [.auth, .workspace]) { s in try await body(SmoothFixture(s: s)) }
    }
}
