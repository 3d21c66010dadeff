import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing

/// `/community-server/community...` through the gateway, as Smooth's iOS client calls it.
@Suite("Smooth communities")
struct SmoothCommunityTests {
    static let bareEnvelope: Set<String> = ["isSuccess", "code", "message"]

    @Test("POST /community (multipart, icon served without a token) and GET /community: {rooms:[], communities} newest first")
    func createAndList() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user()
            let other = try await f.user()
            let created = try await f.s.smoothMultipart(
                .post, "/community-server/community", owner.smooth, fields: ["name": "  스터디  ", "public": "false"], file: pngBytes,
                fileField: "icon", contentType: "image/png")
            #expect(created.outcome == "200 1000")
            let community = try #require(created.result)
            #expect(Set(community.keys) == ["id", "name", "icon"])
            #expect(community["name"] as? String == "스터디")
            let first = try #require(community["id"] as? Int)
            #expect(first > 0)
            let icon = try #require(community["icon"] as? String)
            #expect(icon.hasPrefix("http") && icon.contains("/community-server/icons/"))
            // The client loads the icon by URL, with no token and no app key.
            let path = try #require(URL(string: icon)?.path)
            let image = try await f.s.client.execute(uri: path, method: .get, headers: [:], body: nil)
            #expect(image.status == .ok && image.headers[.contentType] == "image/png")
            #expect(Array(buffer: image.body) == pngBytes)
            #expect(try await f.s.client.execute(uri: "/community-server/icons/nonexistent.png", method: .get, headers: [:], body: nil).status == .badRequest)

            // A JSON body works too (no icon then); names need not be unique across communities.
            let second = try await f.smooth(.post, "/community", owner, json: #"{"name":"스터디","public":true}"#)
            #expect(second.outcome == "200 1000")
            #expect(second.result?["icon"] is NSNull)
            let secondId = try #require(second.result?["id"] as? Int)
            #expect(try await f.smooth(.post, "/community", other, json: #"{"name":"스터디"}"#).outcome == "200 1000")

            let list = try await f.smooth(.get, "/community", owner)
            #expect(list.outcome == "200 1000")
            let result = try #require(list.result)
            #expect(Set(result.keys) == ["rooms", "communities"])
            #expect((result["rooms"] as? [Any])?.isEmpty == true)
            let communities = try #require(result["communities"] as? [[String: Any]])
            #expect(communities.map { $0["id"] as? Int } == [secondId, first])
            #expect(communities.allSatisfy { Set($0.keys) == ["id", "name", "icon"] })
            #expect(try await f.smooth(.get, "/community", try await f.user()).result?["communities"] as? [Any] != nil)

            // Names: 1–100 characters on one line; an icon must be an image.
            for bad in [#"{"name":"   "}"#, #"{"name":"\#(String(repeating: "가", count: 101))"}"#, #"{"name":"a\nb"}"#, #"{"public":true}"#] {
                #expect(try await f.smooth(.post, "/community", owner, json: bad).outcome == "400 1400", "\(bad)")
            }
            let notImage = try await f.s.smoothMultipart(
                .post, "/community-server/community", owner.smooth, fields: ["name": "x"], file: Array("text".utf8), fileField: "icon",
                contentType: "image/png")
            #expect(notImage.outcome == "400 1400")
        }
    }

    @Test("GET /community/{id}: categories then channels in order, exact keys and enum strings; non-members get 4002")
    func detail() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user()
            let stranger = try await f.user()
            let community = try await f.community(owner, name: "게임")
            let answer = try await f.smooth(.get, "/community/\(community)", owner)
            #expect(answer.outcome == "200 1000")
            let result = try #require(answer.result)
            #expect(Set(result.keys) == ["id", "name", "categories"])
            #expect(result["id"] as? Int == community && result["name"] as? String == "게임")
            let categories = try #require(result["categories"] as? [[String: Any]])
            #expect(categories.map { $0["name"] as? String } == ["채팅 채널", "음성 채널"])
            #expect(categories.allSatisfy { Set($0.keys) == ["id", "name", "channels"] })
            let channels = categories.flatMap { $0["channels"] as? [[String: Any]] ?? [] }
            #expect(channels.count == 2)
            for (channel, category) in zip(channels, categories) {
                #expect(Set(channel.keys) == ["id", "categoryId", "username", "name", "type", "public", "parent", "threads"])
                #expect(channel["categoryId"] as? Int == category["id"] as? Int)
                #expect(channel["username"] is NSNull && channel["parent"] is NSNull)
                #expect((channel["threads"] as? [Any])?.isEmpty == true)
                #expect(channel["public"] as? Bool == true && channel["name"] as? String == "일반")
            }
            #expect(channels.map { $0["type"] as? String } == ["TEXT", "VOICE"])
            #expect(Set(channels.compactMap { $0["id"] as? Int }).count == 2)

            for uri in ["/community/\(community)", "/community/999", "/community/abc", "/community/0", "/community/99999999999999999999"] {
                let refused = try await f.smooth(.get, uri, uri == "/community/\(community)" ? stranger : owner)
                #expect(refused.outcome == "400 4002", "\(uri)")
                #expect(envelopeKeys(refused) == Self.bareEnvelope)
                #expect(refused.isSuccess == false)
            }
        }
    }

    @Test("PATCH /community/name: the owner's (1401 for members, 4002 for others, 1400 for bad names)")
    func rename() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user()
            let member = try await f.user()
            let stranger = try await f.user()
            let community = try await f.shared(owner, member)
            let renamed = try await f.smooth(.patch, "/community/name", owner, json: #"{"id":\#(community),"name":"새 이름"}"#)
            #expect(renamed.outcome == "200 1000")
            #expect(envelopeKeys(renamed) == Self.bareEnvelope)  // no `result`
            #expect(try await f.smooth(.get, "/community/\(community)", member).result?["name"] as? String == "새 이름")
            #expect(try await f.smooth(.patch, "/community/name", member, json: #"{"id":\#(community),"name":"x"}"#).outcome == "400 1401")
            #expect(try await f.smooth(.patch, "/community/name", stranger, json: #"{"id":\#(community),"name":"x"}"#).outcome == "400 4002")
            #expect(try await f.smooth(.patch, "/community/name", owner, json: #"{"id":\#(community),"name":""}"#).outcome == "400 1400")
            #expect(try await f.smooth(.patch, "/community/name", owner, json: #"{"name":"x"}"#).outcome == "400 4002")
        }
    }

    @Test("PATCH /community/icon (multipart id, icon?): the owner's; no icon part clears it")
    func icon() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user()
            let member = try await f.user()
            let stranger = try await f.user()
            let community = try await f.shared(owner, member)
            let withIcon = try await f.s.smoothMultipart(
                .patch, "/community-server/community/icon", owner.smooth, fields: ["id": String(community)], file: pngBytes, fileField: "icon",
                contentType: "image/png")
            #expect(withIcon.outcome == "200 1000")
            let listed = try #require(try await f.smooth(.get, "/community", member).result?["communities"] as? [[String: Any]])
            let icon = try #require(listed.first?["icon"] as? String)
            #expect(try await f.s.client.execute(uri: try #require(URL(string: icon)?.path), method: .get, headers: [:], body: nil).status == .ok)
            let refused = try await f.s.smoothMultipart(
                .patch, "/community-server/community/icon", member.smooth, fields: ["id": String(community)], file: pngBytes, fileField: "icon",
                contentType: "image/png")
            #expect(refused.outcome == "400 1401")
            let foreign = try await f.s.smoothMultipart(
                .patch, "/community-server/community/icon", stranger.smooth, fields: ["id": String(community)], file: pngBytes, fileField: "icon",
                contentType: "image/png")
            #expect(foreign.outcome == "400 4002")
            // Without an icon part the community has none any more (and the old file is gone).
            let cleared = try await f.s.smoothMultipart(.patch, "/community-server/community/icon", owner.smooth, fields: ["id": String(community)])
            #expect(cleared.outcome == "200 1000")
            #expect((try await f.smooth(.get, "/community", member).result?["communities"] as? [[String: Any]])?.first?["icon"] is NSNull)
            #expect(try await f.s.client.execute(uri: try #require(URL(string: icon)?.path), method: .get, headers: [:], body: nil).status == .badRequest)
        }
    }

    @Test("DELETE /community/{id}: the owner's; afterwards it is gone for everyone (4002)")
    func delete() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user()
            let member = try await f.user()
            let community = try await f.shared(owner, member)
            #expect(try await f.smooth(.delete, "/community/\(community)", member).outcome == "400 1401")
            let deleted = try await f.smooth(.delete, "/community/\(community)", owner)
            #expect(deleted.outcome == "200 1000" && deleted.result == nil)
            #expect(try await f.smooth(.get, "/community/\(community)", member).outcome == "400 4002")
            #expect(try await f.smooth(.delete, "/community/\(community)", owner).outcome == "400 4002")
            #expect((try await f.smooth(.get, "/community", member).result?["communities"] as? [Any])?.isEmpty == true)
        }
    }
}
