import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SuiteTesting
import Testing

@Suite("Workspaces through the gateway")
struct WorkspaceEndpointTests {
    @Test("create, list, detail: contract shapes, default channel, cover always present")
    func createListDetail() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user("주인")
            let created = try await s.createWorkspace(owner, name: "새싹 스터디", description: "공부해요")
            #expect(Set(created.keys) == ["workspace_id", "name", "description", "coverImage", "owner_id", "createdAt"])
            #expect(created["name"] as? String == "새싹 스터디")
            #expect(created["owner_id"] as? String == owner.id)
            #expect(created["coverImage"] as? String == "/static/workspaces/default-cover.png")
            let wid = id(created, "workspace_id")

            let list = try await s.get("/v1/workspaces", owner)
            #expect(list.status == .ok)
            try expectContractDates(list)
            let workspaces = try #require(jsonArray(list))
            #expect(workspaces.map { id($0, "workspace_id") } == [wid])

            let detail = try await s.get("/v1/workspaces/\(wid)", owner)
            #expect(detail.status == .ok)
            try expectContractDates(detail)
            let body = try #require(jsonObject(detail))
            let channels = try #require(body["channels"] as? [[String: Any]])
            #expect(channels.map { $0["name"] as? String } == ["일반"])
            #expect(Set(channels[0].keys).isSubset(of: ["channel_id", "name", "description", "coverImage", "owner_id", "createdAt"]))
            let members = try #require(body["workspaceMembers"] as? [[String: Any]])
            #expect(members.count == 1)
            #expect(members[0]["user_id"] as? String == owner.id && members[0]["email"] as? String == owner.email)
            #expect(members[0]["nickname"] as? String == "주인")

            // The default cover is a real image; an uploaded cover replaces it and is served to members.
            let cover = try await s.get("/v1/static/workspaces/default-cover.png", owner)
            #expect(cover.status == .ok && cover.headers[.contentType] == "image/png")
            let withImage = try await s.createWorkspace(owner, image: jpegBytes)
            let path = try #require(withImage["coverImage"] as? String)
            #expect(path.hasPrefix("/static/workspaces/") && path.hasSuffix(".jpg"))
            let served = try await s.get("/v1\(path)", owner)
            #expect(served.status == .ok && Array(served.body.readableBytesView) == jpegBytes)
            let stranger = try await s.user()
            #expect(outcome(try await s.get("/v1\(path)", stranger)) == "400 E13")
        }
    }

    @Test("create: E11 for a missing or too long name or a non-image, E12 for a taken name (any case)")
    func createErrors() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            #expect(outcome(try await s.multipartRequest(.post, "/v1/workspaces", owner, fields: ["description": "no name"])) == "400 E11")
            #expect(outcome(try await s.multipartRequest(.post, "/v1/workspaces", owner, fields: ["name": "   "])) == "400 E11")
            #expect(outcome(try await s.multipartRequest(.post, "/v1/workspaces", owner, fields: ["name": String(repeating: "가", count: 31)])) == "400 E11")
            #expect(
                outcome(try await s.multipartRequest(.post, "/v1/workspaces", owner, fields: ["name": "x"], image: Array("not an image".utf8))) == "400 E11")
            _ = try await s.createWorkspace(owner, name: "Taken Name")
            #expect(outcome(try await s.multipartRequest(.post, "/v1/workspaces", owner, fields: ["name": "taken name"])) == "400 E12")
            // AMOR's image/jpg type is accepted (the bytes decide).
            let amor = try await s.multipartRequest(.post, "/v1/workspaces", owner, fields: ["name": "amor"], image: jpegBytes, imageType: "image/jpg")
            #expect(amor.status == .ok)
        }
    }

    @Test("edit: owner only (E14), no changes E12, taken name E12, new cover replaces the old")
    func edit() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            let member = try await s.user()
            let wid = id(try await s.createWorkspace(owner, name: "before", description: "d"), "workspace_id")
            _ = try await s.createWorkspace(owner, name: "other")
            try await s.invite(member, to: wid, by: owner)
            let uri = "/v1/workspaces/\(wid)"
            #expect(outcome(try await s.multipartRequest(.put, uri, member, fields: ["name": "mine now"])) == "400 E14")
            #expect(outcome(try await s.multipartRequest(.put, uri, owner, fields: ["name": "before", "description": "d"])) == "400 E12")
            #expect(outcome(try await s.multipartRequest(.put, uri, owner, fields: ["name": "OTHER"])) == "400 E12")
            let renamed = try await s.multipartRequest(.put, uri, owner, fields: ["name": "after"])
            #expect(renamed.status == .ok)
            #expect(jsonObject(renamed)?["name"] as? String == "after")
            #expect(jsonObject(renamed)?["description"] as? String == "d")
            let covered = try await s.multipartRequest(.put, uri, owner, fields: ["name": "after"], image: pngBytes, imageType: "image/png")
            let cover = try #require(jsonObject(covered)?["coverImage"] as? String)
            #expect(cover.hasSuffix(".png"))
            let recovered = try await s.multipartRequest(.put, uri, owner, fields: [:], image: jpegBytes)
            #expect(recovered.status == .ok)
            #expect(outcome(try await s.get("/v1\(cover)", owner)) == "400 E13")  // the replaced file is gone
        }
    }

    @Test("invite by email: E11 bad email, E03 unknown user, E12 already a member, E14 not the owner")
    func inviteByEmail() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            let member = try await s.user("멤버")
            let third = try await s.user()
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            let uri = "/v1/workspaces/\(wid)/members"
            #expect(outcome(try await s.send(.post, uri, owner, json: #"{"email":"not-an-email"}"#)) == "400 E11")
            #expect(outcome(try await s.send(.post, uri, owner, json: #"{"email":"nobody@example.com"}"#)) == "400 E03")
            let invited = try await s.send(.post, uri, owner, json: #"{"email":"\#(member.email.uppercased())"}"#)
            #expect(invited.status == .ok)
            #expect(Set(try #require(jsonObject(invited)).keys).isSubset(of: ["user_id", "email", "nickname", "profileImage"]))
            #expect(jsonObject(invited)?["user_id"] as? String == member.id)
            #expect(outcome(try await s.send(.post, uri, owner, json: #"{"email":"\#(member.email)"}"#)) == "400 E12")
            #expect(outcome(try await s.send(.post, uri, member, json: #"{"email":"\#(third.email)"}"#)) == "400 E14")

            // The invitee sees the workspace and is in its default channel.
            #expect(try #require(jsonArray(try await s.get("/v1/workspaces", member))).map { id($0, "workspace_id") } == [wid])
            let mine = try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/my-channels", member)))
            #expect(mine.map { $0["name"] as? String } == ["일반"])
            let members = try #require(jsonArray(try await s.get(uri, member)))
            #expect(members.map { id($0, "user_id") } == [owner.id, member.id])
            let one = try await s.get("\(uri)/\(member.id)", owner)
            #expect(jsonObject(one)?["nickname"] as? String == "멤버")
            #expect(outcome(try await s.get("\(uri)/\(third.id)", owner)) == "400 E13")
        }
    }

    @Test("profile changes reach member lists through auth.user.v1")
    func profileProjection() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user("옛이름")
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            let edited = try await s.send(.put, "/v1/users/me", owner, json: #"{"nickname":"새이름","phone":"010-0000-0000"}"#)
            #expect(edited.status == .ok)
            try await s.waitForProfile(owner.id, nickname: "새이름")
            let members = try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/members", owner)))
            #expect(members.first?["nickname"] as? String == "새이름")
        }
    }

    @Test("search: Korean substrings of channel names and member nicknames; E11 empty keyword; wildcards literal")
    func search() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user("관리자")
            let member = try await s.user("공지봇")
            let outsider = try await s.user("공지맨")
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            try await s.invite(member, to: wid, by: owner)
            _ = try await s.createChannel(owner, in: wid, name: "공지사항")
            _ = try await s.createChannel(owner, in: wid, name: "자유게시판")
            _ = try await s.createChannel(owner, in: wid, name: "100%_done")
            let found = try await s.get("/v1/workspaces/\(wid)/search?keyword=\("공지".addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed)!)", member)
            #expect(found.status == .ok)
            let body = try #require(jsonObject(found))
            #expect(body["workspace_id"] as? String == wid && body["coverImage"] is String)
            #expect((body["channels"] as? [[String: Any]])?.map { $0["name"] as? String } == ["공지사항"])
            // Members of this workspace only: the outsider with a matching nickname is not leaked.
            #expect((body["workspaceMembers"] as? [[String: Any]])?.map { id($0, "user_id") } == [member.id])
            _ = outsider
            let literal = try #require(jsonObject(try await s.get("/v1/workspaces/\(wid)/search?keyword=%25_", owner)))
            #expect((literal["channels"] as? [[String: Any]])?.map { $0["name"] as? String } == ["100%_done"])
            #expect(outcome(try await s.get("/v1/workspaces/\(wid)/search?keyword=", owner)) == "400 E11")
            #expect(outcome(try await s.get("/v1/workspaces/\(wid)/search", owner)) == "400 E11")
        }
    }

    @Test("exit: owner E15, channel owner E15, member leaves (all channels) and gets the remaining list")
    func exit() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            let member = try await s.user()
            let keep = id(try await s.createWorkspace(owner), "workspace_id")
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            try await s.invite(member, to: keep, by: owner)
            try await s.invite(member, to: wid, by: owner)
            #expect(outcome(try await s.get("/v1/workspaces/\(wid)/exit", owner)) == "400 E15")
            let channel = id(try await s.createChannel(member, in: wid), "channel_id")
            #expect(outcome(try await s.get("/v1/workspaces/\(wid)/exit", member)) == "400 E15")
            // The new owner must be in the channel.
            #expect(try await s.request(.post, "/v1/workspaces/\(wid)/channels/\(channel)/join", token: owner.token).status == .ok)
            let handed = try await s.send(.put, "/v1/workspaces/\(wid)/channels/\(channel)/transfer/ownership", member, json: #"{"owner_id":"\#(owner.id)"}"#)
            #expect(handed.status == .ok, "\(String(buffer: handed.body))")
            let left = try await s.get("/v1/workspaces/\(wid)/exit", member)
            #expect(left.status == .ok)
            #expect(try #require(jsonArray(left)).map { id($0, "workspace_id") } == [keep])
            #expect(outcome(try await s.get("/v1/workspaces/\(wid)", member)) == "400 E13")
            let members = try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/channels/\(channel)/members", owner)))
            #expect(members.map { id($0, "user_id") } == [owner.id])
        }
    }

    @Test("transfer ownership: E11 bad body or self, E13 non-member target, E14 not the owner; old owner can then leave")
    func transfer() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            let member = try await s.user()
            let outsider = try await s.user()
            let wid = id(try await s.createWorkspace(owner), "workspace_id")
            try await s.invite(member, to: wid, by: owner)
            let uri = "/v1/workspaces/\(wid)/transfer/ownership"
            #expect(outcome(try await s.send(.put, uri, owner, json: #"{}"#)) == "400 E11")
            #expect(outcome(try await s.send(.put, uri, owner, json: #"{"owner_id":"\#(owner.id)"}"#)) == "400 E11")
            #expect(outcome(try await s.send(.put, uri, owner, json: #"{"owner_id":"\#(outsider.id)"}"#)) == "400 E13")
            #expect(outcome(try await s.send(.put, uri, member, json: #"{"owner_id":"\#(member.id)"}"#)) == "400 E14")
            let moved = try await s.send(.put, uri, owner, json: #"{"owner_id":"\#(member.id)"}"#)
            #expect(moved.status == .ok)
            #expect(jsonObject(moved)?["owner_id"] as? String == member.id)
            // The old owner still owns the default channel, so must hand that over too before leaving.
            #expect(outcome(try await s.get("/v1/workspaces/\(wid)/exit", owner)) == "400 E15")
            let channels = try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/channels", owner)))
            let general = id(channels.first, "channel_id")
            let handed = try await s.send(.put, "/v1/workspaces/\(wid)/channels/\(general)/transfer/ownership", owner, json: #"{"owner_id":"\#(member.id)"}"#)
            #expect(handed.status == .ok)
            #expect(try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/exit", owner))).isEmpty)
        }
    }

    @Test("delete: owner only, then the workspace and its channels are gone for everyone")
    func delete() async throws {
        try await Stack.workspaces { s in
            let owner = try await s.user()
            let member = try await s.user()
            let wid = id(try await s.createWorkspace(owner, image: jpegBytes), "workspace_id")
            try await s.invite(member, to: wid, by: owner)
            #expect(outcome(try await s.request(.delete, "/v1/workspaces/\(wid)", token: member.token)) == "400 E14")
            let deleted = try await s.request(.delete, "/v1/workspaces/\(wid)", token: owner.token)
            #expect(deleted.status == .ok)
            #expect(outcome(try await s.get("/v1/workspaces/\(wid)", owner)) == "400 E13")
            #expect(try #require(jsonArray(try await s.get("/v1/workspaces", member))).isEmpty)
            #expect(outcome(try await s.request(.delete, "/v1/workspaces/\(wid)", token: owner.token)) == "400 E13")
            // The name is free again.
            _ = try await s.createWorkspace(owner)
        }
    }

    @Test("malformed ids and unknown workspaces are E13, never a 500")
    func malformedIds() async throws {
        try await Stack.workspaces { s in
            let user = try await s.user()
            #expect(outcome(try await s.get("/v1/workspaces/not-a-uuid", user)) == "400 E13")
            #expect(outcome(try await s.get("/v1/workspaces/\(UUID().uuidString)", user)) == "400 E13")
            #expect(outcome(try await s.get("/v1/workspaces/\(UUID().uuidString)/channels/xyz", user)) == "400 E13")
            #expect(outcome(try await s.send(.put, "/v1/workspaces/\(UUID().uuidString)/transfer/ownership", user, json: "{not json")) == "400 E11")
        }
    }
}
