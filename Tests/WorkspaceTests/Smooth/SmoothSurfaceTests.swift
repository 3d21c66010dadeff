import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing

/// The edges of `/community-server`: refusals in the envelope (never a 500), 401 with an empty
/// body, the `workspace.v1` events with integer aliases, and the wall between the surfaces.
@Suite("Smooth community surface")
struct SmoothSurfaceTests {
    @Test("malformed JSON is a 400 envelope (1400); no token is 401 with an empty body; nothing answers 500")
    func refusals() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user()
            let community = try await f.community(owner)
            let writes: [(HTTPRequest.Method, String)] = [
                (.post, "/community"), (.patch, "/community/name"), (.post, "/community/invitation"), (.post, "/community/member"),
                (.post, "/category"), (.patch, "/category/name"), (.patch, "/category/location"), (.post, "/channel"), (.patch, "/channel/location"),
            ]
            for (method, uri) in writes {
                for body in ["{", "[1,2]", #"{"id":"#, "not json", #"{"id":true,"name":5,"code":7,"communityId":"x"}"#] {
                    let answer = try await f.smooth(method, uri, owner, json: body)
                    #expect(answer.status == .badRequest, "\(method) \(uri) \(body): \(answer.body)")
                    #expect(answer.isSuccess == false && envelopeKeys(answer) == ["isSuccess", "code", "message"])
                    #expect([1400, 4002, 4003, 4004, 4005].contains(answer.code ?? 0), "\(method) \(uri) \(body): \(answer.body)")
                }
            }
            let everything: [(HTTPRequest.Method, String)] =
                writes + [
                    (.get, "/community"), (.get, "/community/\(community)"), (.delete, "/community/\(community)"), (.patch, "/community/icon"),
                    (.get, "/community/\(community)/member"), (.delete, "/community/\(community)/member?id=1"),
                    (.get, "/community/\(community)/invitation"), (.delete, "/community/invitation?id=1"), (.delete, "/category/1"), (.delete, "/channel/1"),
                ]
            for (method, uri) in everything {
                let anonymous = try await f.smooth(method, uri, nil, json: "{}")
                #expect(anonymous.outcome == "401" && anonymous.body.isEmpty, "\(method) \(uri)")
            }
            // Straight to the service without the gateway's identity: the same 401.
            let workspace = try #require(f.s.services["workspace"])
            let direct = try await workspace.execute(uri: "/smooth/community/community", method: .get, headers: [:], body: nil)
            #expect(direct.status == .unauthorized && direct.body.readableBytes == 0)
            // Unknown paths and methods under the prefix are refusals, not 500s.
            for (method, uri) in [(HTTPRequest.Method.get, "/community/\(community)/nothing"), (.put, "/community"), (.get, "/category")] {
                let answer = try await f.smooth(method, uri, owner)
                #expect(answer.outcome == "400 1400", "\(method) \(uri): \(answer.outcome)")
            }
        }
    }

    @Test("workspace.v1 carries the integer aliases; communities and /v1 workspaces never see each other")
    func eventsAndSeparation() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user()
            let member = try await f.user()
            let community = try await f.shared(owner, member)
            let uuid = try await f.uuid(ofCommunity: community).uuidString.lowercased()
            let text = try await f.categoryId(community, owner, named: "채팅 채널")
            let added = try #require(
                try await f.smooth(.post, "/channel", owner, json: #"{"id":\#(text),"name":"새","type":"TEXT","public":true}"#).result?["id"] as? Int)
            #expect(try await f.smooth(.delete, "/community/\(community)/member?id=\(member.id)", member).outcome == "200 1000")

            let expected = [
                "workspace.created", "workspace.channel-created", "workspace.member-joined",  // creation: text channel
                "workspace.channel-created", "workspace.channel-member-joined",  // the voice channel
                "workspace.member-joined",  // joined by invitation
                "workspace.channel-created", "workspace.channel-member-joined", "workspace.channel-member-joined",  // a public channel, both members
                "workspace.member-left",
            ]
            let events = try await WorkspaceEventsTests.read(f.s.cluster) { seen in seen.filter { $0.subject == uuid }.count >= expected.count }
                .filter { $0.subject == uuid }
            #expect(events.map(\.type) == expected)
            let general = try await f.channelId(community, owner, named: "일반", type: "TEXT")
            let voice = try await f.channelId(community, owner, named: "일반", type: "VOICE")
            #expect(events[0].data["alias"] == String(community) && events[0].data["defaultChannelAlias"] == String(general))
            #expect(events[1].data["alias"] == String(general) && events[3].data["alias"] == String(voice))
            #expect(events[5].data["userId"] == member.uuid.uuidString.lowercased() && events[5].data["via"] == "invite-code")
            #expect(events[5].data["channelIds"]?.contains(try await f.channelUUID(general)) == true)
            #expect(events[6].data["alias"] == String(added))

            // The /v1 surface does not list or open communities, nor join them by their codes.
            let token = owner.smooth.token
            let listed = try #require(jsonArray(try await f.s.request(.get, "/v1/workspaces", token: token)))
            #expect(listed.isEmpty)
            #expect(outcome(try await f.s.request(.get, "/v1/workspaces/\(uuid)", token: token)) == "400 E13")
            let url = try #require(try await f.smooth(.post, "/community/invitation", owner, json: #"{"id":\#(community)}"#).result?["url"] as? String)
            let code = String(try #require(url.split(separator: "/").last))
            let outsider = try await f.s.user()
            #expect(outcome(try await f.s.request(.post, "/v1/invites/\(code)", token: outsider.token)) == "400 E13")
            // …and Smooth does not see /v1 workspaces; their events carry aliases too.
            let v1Owner = try await f.s.user()
            let workspace = id(try await f.s.createWorkspace(v1Owner), "workspace_id")
            #expect(try await f.s.invite(owner.smooth.email, to: workspace, by: v1Owner) == .ok)
            #expect((try await f.smooth(.get, "/community", owner).result?["communities"] as? [[String: Any]])?.map { $0["id"] as? Int } == [community])
            let v1Events = try await WorkspaceEventsTests.read(f.s.cluster) { seen in seen.contains { $0.subject == workspace } }
            let created = try #require(v1Events.first { $0.subject == workspace && $0.type == "workspace.created" })
            #expect(Int(created.data["alias"] ?? "") ?? 0 > 0 && Int(created.data["defaultChannelAlias"] ?? "") ?? 0 > 0)
        }
    }
}

extension Stack {
    /// Invites by email on /v1 (`Stack.invite` takes a `User`, which only sign-up makes).
    func invite(_ email: String, to workspace: String, by owner: User) async throws -> HTTPResponse.Status {
        try await send(.post, "/v1/workspaces/\(workspace)/members", owner, json: #"{"email":"\#(email)"}"#).status
    }
}

extension SmoothFixture {
    /// The suite's id of a channel, lower-case (as events carry it).
    func channelUUID(_ alias: Int) async throws -> String {
        let db = try #require(s.workspaceDatabase)
        for try await id in try await db.query("SELECT id FROM channels WHERE alias = \(Int64(alias))").decode(UUID.self) {
            return id.uuidString.lowercased()
        }
        return "none"
    }
}
