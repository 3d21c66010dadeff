import Events
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing

/// Issue 20 §1: WorkSpaceX explores channels without a join call. It lists every channel, asks
/// "[name] 채널에 참여하시겠습니까?", then opens the channel: detail, chats, and a post. A member of
/// the workspace who reads or writes a channel's chats joins it, as `POST …/join` would.
@Suite("Explore and join: reading a channel's chats joins it")
struct ExploreAndJoinTests {
    struct Channel {
        let workspace: String
        let id: String
        var path: String { "/v1/workspaces/\(workspace)/channels/\(id)" }
        var chats: String { path + "/chats" }
    }

    /// A workspace of `owner` with `members` invited, and a second channel "탐색" only the owner
    /// is in, with one chat of the owner's; returned once chat knows the channel.
    func explorable(_ s: Stack, _ owner: User, _ members: [User]) async throws -> Channel {
        let workspace = id(try await s.createWorkspace(owner), "workspace_id")
        for member in members { try await s.invite(member, to: workspace, by: owner) }
        let channel = Channel(workspace: workspace, id: id(try await s.createChannel(owner, in: workspace, name: "탐색"), "channel_id"))
        try await s.waitForChatMember(owner.id, channel: channel.id)
        for member in members { try await s.waitForWorkspaceMemberInChat(member.id, workspace: workspace) }
        let welcome = try await s.multipartRequest(.post, channel.chats, owner, fields: ["content": "환영"])
        #expect(welcome.status == .ok, "\(String(buffer: welcome.body))")
        return channel
    }

    func memberIds(_ response: TestResponse) -> Set<String> {
        Set(((jsonObject(response)?["channelMembers"] as? [[String: Any]]) ?? []).map { id($0, "user_id") })
    }

    /// Rows of `type` in a service's outbox that name `user` (events are JSON in the payload).
    func outboxCount(_ db: PostgresClient, type: String, user: String, channel: String) async throws -> Int {
        var count = 0
        for try await n in try await db.query(
            """
            SELECT count(*)::int FROM outbox WHERE event_type = \(type)
              AND convert_from(payload, 'UTF8') LIKE \("%\"userId\":\"\(user)\"%") AND convert_from(payload, 'UTF8') LIKE \("%\(channel)%")
            """
        ).decode(Int.self) {
            count = n
        }
        return count
    }

    @Test("as WorkSpaceX: list → detail → chats (answered at once) → post; the join reaches the member list, my-channels and unreads")
    func exploreThenPost() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user("주인")
            let explorer = try await s.user("탐험가")
            let stranger = try await s.user("외부인")
            let channel = try await explorable(s, owner, [explorer])
            let start = Timestamp.format(Date().addingTimeInterval(-60))

            let all = try #require(jsonArray(try await s.get("/v1/workspaces/\(channel.workspace)/channels", explorer)))
            #expect(all.contains { id($0, "channel_id") == channel.id })
            let mine = try #require(jsonArray(try await s.get("/v1/workspaces/\(channel.workspace)/my-channels", explorer)))
            #expect(!mine.contains { id($0, "channel_id") == channel.id })
            let detail = try await s.get(channel.path, explorer)
            #expect(detail.status == .ok && memberIds(detail) == [owner.id])

            // A read refused for its cursor joins nothing.
            #expect(outcome(try await s.get(channel.chats + "?cursor_date=yesterday", explorer)) == "400 E11")
            #expect(try await outboxCount(try #require(s.chatDatabase), type: "chat.channel-join-requested", user: explorer.id, channel: channel.id) == 0)
            // Opening the channel: the history comes back at once, not E13 and not empty.
            let history = try #require(jsonArray(try await s.get(channel.chats, explorer)))
            #expect(history.map { $0["content"] as? String } == ["환영"])
            let posted = try await s.multipartRequest(.post, channel.chats, explorer, fields: ["content": "안녕하세요"])
            #expect(posted.status == .ok, "\(String(buffer: posted.body))")
            #expect(try #require(jsonArray(try await s.get(channel.chats, owner))).map { $0["content"] as? String } == ["환영", "안녕하세요"])

            // The workspace applies the join: the detail's member list, my-channels, and a second
            // POST …/join says "already in" (E12).
            try await eventually("the detail lists the explorer", timeout: .seconds(30)) {
                memberIds(try await s.get(channel.path, explorer)) == [owner.id, explorer.id]
            }
            let mineAfter = try #require(jsonArray(try await s.get("/v1/workspaces/\(channel.workspace)/my-channels", explorer)))
            #expect(mineAfter.contains { id($0, "channel_id") == channel.id })
            #expect(outcome(try await s.request(.post, channel.path + "/join", token: explorer.token)) == "400 E12")
            // Unreads count the owner's chat, not the explorer's own.
            #expect(jsonObject(try await s.get(channel.path + "/unreads?after=\(start)", explorer))?["count"] as? Int == 1)

            // One join request from chat, one member-joined from the workspace.
            let chatDb = try #require(s.chatDatabase)
            let workspaceDb = try #require(s.workspaceDatabase)
            #expect(try await outboxCount(chatDb, type: "chat.channel-join-requested", user: explorer.id, channel: channel.id) == 1)
            #expect(try await outboxCount(workspaceDb, type: "workspace.channel-member-joined", user: explorer.id, channel: channel.id) == 1)

            // Not a member of the workspace: E13 for reading and writing, and no join.
            #expect(outcome(try await s.get(channel.chats, stranger)) == "400 E13")
            #expect(outcome(try await s.multipartRequest(.post, channel.chats, stranger, fields: ["content": "끼워줘"])) == "400 E13")
            #expect(outcome(try await s.get(channel.path + "/unreads?after=\(start)", stranger)) == "400 E13")
            #expect(try await outboxCount(chatDb, type: "chat.channel-join-requested", user: stranger.id, channel: channel.id) == 0)
            try await s.waitForChatMember(stranger.id, channel: channel.id, present: false)
        }
    }

    @Test("eight concurrent reads and posts by three explorers: each joins once, every call answers")
    func concurrentReadsJoinOnce() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let explorers = [try await s.user(), try await s.user(), try await s.user()]
            let channel = try await explorable(s, owner, explorers)
            let racing = s.onOwnConnections()  // really at once, not queued on one connection
            for explorer in explorers {
                let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    for i in 0..<8 {
                        group.addTask {
                            i % 4 == 3
                                ? try await racing.multipartRequest(.post, channel.chats, explorer, fields: ["content": "동시 \(i)"]).status
                                : try await racing.get(channel.chats, explorer).status
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(statuses.allSatisfy { $0 == .ok }, "\(statuses)")
            }
            let workspaceDb = try #require(s.workspaceDatabase)
            try await eventually("the workspace has the explorers", timeout: .seconds(30)) {
                memberIds(try await s.get(channel.path, owner)) == Set([owner.id] + explorers.map(\.id))
            }
            for explorer in explorers {
                #expect(try await outboxCount(try #require(s.chatDatabase), type: "chat.channel-join-requested", user: explorer.id, channel: channel.id) == 1)
                #expect(try await outboxCount(workspaceDb, type: "workspace.channel-member-joined", user: explorer.id, channel: channel.id) == 1)
            }
            #expect(try #require(jsonArray(try await s.get(channel.chats, owner))).count == 1 + 2 * explorers.count)
        }
    }

    @Test("a join the workspace refuses (the user left meanwhile) is taken back; leaving the channel and reading again rejoins")
    func refusedAndRejoined() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let leaver = try await s.user()
            let returner = try await s.user()
            let channel = try await explorable(s, owner, [leaver, returner])

            // The workspace no longer has `leaver`, chat's read model still does (the leave event
            // not applied yet, held back here by changing only the workspace's table): chat lets
            // them read, the workspace refuses, chat takes the membership back.
            let workspaceDb = try #require(s.workspaceDatabase)
            let leaverId = try #require(UUID(uuidString: leaver.id))
            _ = try await workspaceDb.query("DELETE FROM workspace_members WHERE user_id = \(leaverId)")
            #expect(try await s.get(channel.chats, leaver).status == .ok)
            try await eventually("the refusal", timeout: .seconds(30)) {
                try await outboxCount(workspaceDb, type: "workspace.channel-join-refused", user: leaver.id, channel: channel.id) == 1
            }
            try await s.waitForChatMember(leaver.id, channel: channel.id, present: false)
            #expect(memberIds(try await s.get(channel.path, owner)) == [owner.id])

            // Leaving the channel, then opening it again from the list: in again.
            #expect(try await s.get(channel.chats, returner).status == .ok)
            try await eventually("the workspace has the returner", timeout: .seconds(30)) {
                memberIds(try await s.get(channel.path, owner)).contains(returner.id)
            }
            #expect(try await s.get(channel.path + "/exit", returner).status == .ok)
            try await s.waitForChatMember(returner.id, channel: channel.id, present: false)
            #expect(try await s.get(channel.chats, returner).status == .ok)
            try await eventually("the returner is back", timeout: .seconds(30)) {
                memberIds(try await s.get(channel.path, owner)).contains(returner.id)
            }
            #expect(try await outboxCount(workspaceDb, type: "workspace.channel-member-joined", user: returner.id, channel: channel.id) == 2)
        }
    }

    @Test("a Smooth community's private channel is not joined by reading it on /v1 (E13, nothing leaked)")
    func communityChannelsAreNotJoinable() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.smoothUser()
            let guest = try await s.smoothUser()
            let created = try await s.smoothMultipart(
                .post, "/community-server/community", owner, fields: ["name": "server", "public": "true"], file: nil, fileField: "icon",
                contentType: "image/png")
            let community = try #require(created.result?["id"] as? Int)
            let invitation = try await s.smooth(.post, "/community-server/community/invitation", owner, json: #"{"id":\#(community)}"#)
            let url = try #require(invitation.result?["url"] as? String)
            #expect(try await s.smooth(.post, "/community-server/community/member", guest, json: #"{"code":"\#(url)"}"#).outcome == "200 1000")
            let layout = try #require(try await s.smooth(.get, "/community-server/community/\(community)", owner).result?["categories"] as? [[String: Any]])
            let category = try #require(layout.first { ($0["channels"] as? [[String: Any]])?.isEmpty == false }?["id"] as? Int)
            let secret = try await s.smooth(
                .post, "/community-server/channel", owner, json: #"{"id":\#(category),"name":"비밀","type":"TEXT","public":false}"#)
            let secretAlias = try #require(secret.result?["id"] as? Int)

            let chatDb = try #require(s.chatDatabase)
            let ownerV1 = try await s.v1User(owner)
            let guestV1 = try await s.v1User(guest)
            try await s.waitForChatMember(ownerV1.id, channelAlias: secretAlias)
            var ids: (channel: UUID, workspace: UUID)?
            for try await row in try await chatDb.query("SELECT id, workspace_id FROM channels WHERE alias = \(Int64(secretAlias))").decode((UUID, UUID).self) {
                ids = row
            }
            let (secretId, communityId) = try #require(ids)
            try await s.waitForWorkspaceMemberInChat(guestV1.id, workspace: communityId.uuidString.lowercased())
            let chats = "/v1/workspaces/\(communityId.uuidString.lowercased())/channels/\(secretId.uuidString.lowercased())/chats"
            #expect(try await s.multipartRequest(.post, chats, ownerV1, fields: ["content": "비밀 이야기"]).status == .ok)
            #expect(outcome(try await s.get(chats, guestV1)) == "400 E13")
            #expect(outcome(try await s.multipartRequest(.post, chats, guestV1, fields: ["content": "엿듣기"])) == "400 E13")
            try await s.waitForChatMember(guestV1.id, channel: secretId.uuidString.lowercased(), present: false)
        }
    }
}
