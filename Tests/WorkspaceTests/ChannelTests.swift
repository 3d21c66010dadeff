import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SuiteTesting
import Testing

@Suite("Channels through the gateway")
struct ChannelTests {
    @Test("create with multipart (WSX) and JSON (AMOR); E11 bad name, E12 duplicate; lists and detail")
    func createAndList() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user("주인")
            let member = try await s.user()
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            try await s.invite(member, to: wid, by: owner)
            let uri = "/v1/workspaces/\(wid)/channels"
            let multipart = try await s.multipartRequest(
                .post, uri, member, fields: ["name": "디자인", "description": "figma"], image: pngBytes, imageType: "image/png")
            #expect(multipart.status == .ok, "\(String(buffer: multipart.body))")
            try expectContractDates(multipart)
            let design = try #require(jsonObject(multipart))
            #expect(Set(design.keys) == ["channel_id", "name", "description", "coverImage", "owner_id", "createdAt"])
            #expect(design["owner_id"] as? String == member.id)
            let json = try await s.createChannel(owner, in: wid, name: "개발")
            #expect(json["description"] as? String == "about")
            #expect(json["coverImage"] == nil)
            #expect(outcome(try await s.send(.post, uri, owner, json: #"{"name":"개발"}"#)) == "400 E12")
            #expect(outcome(try await s.send(.post, uri, owner, json: #"{"name":""}"#)) == "400 E11")
            #expect(outcome(try await s.send(.post, uri, owner, json: #"{"description":"no name"}"#)) == "400 E11")

            let all = try #require(jsonArray(try await s.get(uri, member)))
            #expect(all.map { $0["name"] as? String } == ["일반", "디자인", "개발"])
            let mine = try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/my-channels", member)))
            #expect(mine.map { $0["name"] as? String } == ["일반", "디자인"])

            let detail = try await s.get("\(uri)/\(id(json, "channel_id"))", member)
            #expect(detail.status == .ok)
            let body = try #require(jsonObject(detail))
            #expect((body["channelMembers"] as? [[String: Any]])?.map { id($0, "user_id") } == [owner.id])
            #expect((body["channelMembers"] as? [[String: Any]])?.first?["nickname"] as? String == "주인")
            let cover = try #require(design["coverImage"] as? String)
            #expect(try await s.get("/v1\(cover)", owner).status == .ok)
        }
    }

    @Test("explore and join a channel; leave it (E11 default, E15 owner, E13 not in it)")
    func joinAndLeave() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            let member = try await s.user()
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            try await s.invite(member, to: wid, by: owner)
            let channels = try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/channels", member)))
            let general = id(channels.first, "channel_id")
            let news = id(try await s.createChannel(owner, in: wid, name: "news"), "channel_id")
            let base = "/v1/workspaces/\(wid)/channels"
            #expect(outcome(try await s.get("\(base)/\(news)/exit", member)) == "400 E13")
            let joined = try await s.request(.post, "\(base)/\(news)/join", token: member.token)
            #expect(joined.status == .ok)
            #expect((jsonObject(joined)?["channelMembers"] as? [[String: Any]])?.map { id($0, "user_id") } == [owner.id, member.id])
            #expect(outcome(try await s.request(.post, "\(base)/\(news)/join", token: member.token)) == "400 E12")
            #expect(outcome(try await s.get("\(base)/\(general)/exit", member)) == "400 E11")
            #expect(outcome(try await s.get("\(base)/\(news)/exit", owner)) == "400 E15")
            let left = try await s.get("\(base)/\(news)/exit", member)
            #expect(left.status == .ok)
            #expect(try #require(jsonArray(left)).map { id($0, "channel_id") } == [general])
        }
    }

    @Test("edit and delete: channel owner or workspace owner; E14 others; E12 no change; default channel cannot be deleted (E11)")
    func editAndDelete() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            let creator = try await s.user()
            let other = try await s.user()
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            try await s.invite(creator, to: wid, by: owner)
            try await s.invite(other, to: wid, by: owner)
            let base = "/v1/workspaces/\(wid)/channels"
            let cid = id(try await s.createChannel(creator, in: wid, name: "room"), "channel_id")
            #expect(outcome(try await s.multipartRequest(.put, "\(base)/\(cid)", other, fields: ["name": "mine"])) == "400 E14")
            #expect(outcome(try await s.multipartRequest(.put, "\(base)/\(cid)", creator, fields: ["name": "room", "description": "about"])) == "400 E12")
            #expect(outcome(try await s.multipartRequest(.put, "\(base)/\(cid)", creator, fields: ["name": "일반"])) == "400 E12")
            let edited = try await s.multipartRequest(.put, "\(base)/\(cid)", creator, fields: ["name": "lounge", "description": ""])
            #expect(edited.status == .ok)
            #expect(jsonObject(edited)?["name"] as? String == "lounge")
            #expect(jsonObject(edited)?["description"] == nil)
            let byOwner = try await s.multipartRequest(.put, "\(base)/\(cid)", owner, fields: ["name": "hall"])
            #expect(byOwner.status == .ok)

            let general = id(try #require(jsonArray(try await s.get(base, owner))).first, "channel_id")
            #expect(outcome(try await s.request(.delete, "\(base)/\(general)", token: owner.token)) == "400 E11")
            #expect(outcome(try await s.request(.delete, "\(base)/\(cid)", token: other.token)) == "400 E14")
            #expect(try await s.request(.delete, "\(base)/\(cid)", token: creator.token).status == .ok)
            #expect(outcome(try await s.get("\(base)/\(cid)", creator)) == "400 E13")
            #expect(try #require(jsonArray(try await s.get(base, owner))).map { id($0, "channel_id") } == [general])
        }
    }

    @Test("transfer channel ownership: target must be a channel member (E13); E11 self; E14 others")
    func transferChannel() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            let member = try await s.user()
            let other = try await s.user()
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            try await s.invite(member, to: wid, by: owner)
            try await s.invite(other, to: wid, by: owner)
            let cid = id(try await s.createChannel(member, in: wid, name: "team"), "channel_id")
            let uri = "/v1/workspaces/\(wid)/channels/\(cid)/transfer/ownership"
            #expect(outcome(try await s.send(.put, uri, member, json: #"{"owner_id":"\#(other.id)"}"#)) == "400 E13")
            #expect(outcome(try await s.send(.put, uri, member, json: #"{"owner_id":"\#(member.id)"}"#)) == "400 E11")
            #expect(outcome(try await s.send(.put, uri, other, json: #"{"owner_id":"\#(other.id)"}"#)) == "400 E14")
            _ = try await s.request(.post, "/v1/workspaces/\(wid)/channels/\(cid)/join", token: other.token)
            let moved = try await s.send(.put, uri, member, json: #"{"owner_id":"\#(other.id)"}"#)
            #expect(moved.status == .ok)
            #expect(jsonObject(moved)?["owner_id"] as? String == other.id)
            // The previous owner may now leave the channel.
            #expect(try await s.get("/v1/workspaces/\(wid)/channels/\(cid)/exit", member).status == .ok)
        }
    }

    @Test("a channel id of another workspace is not found through this one (E13)")
    func crossWorkspace() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            let mine = id(try await s.createWorkspace(owner), "workspace_id")
            let intruder = try await s.user()
            let theirs = id(try await s.createWorkspace(intruder), "workspace_id")
            let secret = id(try await s.createChannel(owner, in: mine, name: "secret"), "channel_id")
            #expect(outcome(try await s.get("/v1/workspaces/\(theirs)/channels/\(secret)", intruder)) == "400 E13")
            #expect(outcome(try await s.get("/v1/workspaces/\(theirs)/channels/\(secret)/members", intruder)) == "400 E13")
            #expect(outcome(try await s.request(.post, "/v1/workspaces/\(theirs)/channels/\(secret)/join", token: intruder.token)) == "400 E13")
            #expect(outcome(try await s.request(.delete, "/v1/workspaces/\(theirs)/channels/\(secret)", token: intruder.token)) == "400 E13")
        }
    }
}
