import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing

/// Categories and channels on `/community-server`: creation, private ones, linked-list moves.
@Suite("Smooth categories and channels")
struct SmoothLayoutTests {
    @Test("POST /category: first in the list; private ones seen by the creator, the members named (the iOS `menbers` spelling too) and the owner")
    func createCategory() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user()
            let member = try await f.user()
            let named = try await f.user()
            let other = try await f.user()
            let stranger = try await f.user()
            let community = try await f.shared(owner, member, named, other)

            let created = try await f.smooth(.post, "/category", member, json: #"{"communityId":\#(community),"name":"공지","public":true}"#)
            #expect(created.outcome == "200 1000" && envelopeKeys(created) == ["isSuccess", "code", "message"])
            #expect(try await f.names(community, other) == ["공지:", "채팅 채널:일반", "음성 채널:일반"])

            // Private: the creator, the members named and the owner see it; nobody else.
            let secret = try await f.smooth(
                .post, "/category", member, json: #"{"communityId":\#(community),"name":"비밀","public":false,"menbers":[\#(named.id)]}"#)
            #expect(secret.outcome == "200 1000")
            for user in [owner, member, named] {
                #expect(try await f.names(community, user).first == "비밀:")
            }
            #expect(try await f.names(community, other).first == "공지:")
            #expect(
                try await f.smooth(.post, "/category", member, json: #"{"communityId":\#(community),"name":"x","public":false,"members":[424242]}"#)
                    .outcome == "400 4010")
            #expect(try await f.smooth(.post, "/category", stranger, json: #"{"communityId":\#(community),"name":"x","public":true}"#).outcome == "400 4002")
            #expect(try await f.smooth(.post, "/category", member, json: #"{"communityId":\#(community),"name":"","public":true}"#).outcome == "400 1400")
        }
    }

    @Test("PATCH /category/name: whoever sees the category; 4003 for unseen or unknown ones")
    func renameCategory() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user()
            let member = try await f.user()
            let named = try await f.user()
            let other = try await f.user()
            let community = try await f.shared(owner, member, named, other)
            let secret = try await f.smooth(
                .post, "/category", member, json: #"{"communityId":\#(community),"name":"비밀","public":false,"members":[\#(named.id)]}"#)
            #expect(secret.outcome == "200 1000")
            let secretId = try await f.categoryId(community, member, named: "비밀")
            #expect(try await f.smooth(.patch, "/category/name", other, json: #"{"id":\#(secretId),"name":"보임?"}"#).outcome == "400 4003")
            #expect(try await f.smooth(.patch, "/category/name", named, json: #"{"id":\#(secretId),"name":"작전"}"#).outcome == "200 1000")
            #expect(try await f.names(community, owner).first == "작전:")
            #expect(try await f.smooth(.patch, "/category/name", named, json: #"{"id":424242,"name":"x"}"#).outcome == "400 4003")
            #expect(try await f.smooth(.patch, "/category/name", named, json: #"{"id":\#(secretId),"name":" "}"#).outcome == "400 1400")
            let general = try await f.categoryId(community, other, named: "채팅 채널")
            #expect(try await f.smooth(.patch, "/category/name", other, json: #"{"id":\#(general),"name":"수다"}"#).outcome == "200 1000")
            #expect(try await f.names(community, owner) == ["작전:", "수다:일반", "음성 채널:일반"])
            #expect(try await f.smooth(.patch, "/category/name", try await f.user(), json: #"{"id":\#(general),"name":"x"}"#).outcome == "400 4003")
        }
    }

    @Test("DELETE /category/{id}: the owner's; its channels go with it")
    func deleteCategory() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user()
            let member = try await f.user()
            let community = try await f.shared(owner, member)
            #expect(try await f.smooth(.post, "/category", member, json: #"{"communityId":\#(community),"name":"공지","public":true}"#).outcome == "200 1000")
            let notice = try await f.categoryId(community, owner, named: "공지")
            let channel = try await f.smooth(.post, "/channel", member, json: #"{"id":\#(notice),"name":"안내","type":"TEXT","public":true}"#)
            #expect(channel.outcome == "200 1000")
            #expect(try await f.smooth(.delete, "/category/\(notice)", member).outcome == "400 1401")
            #expect(try await f.smooth(.delete, "/category/\(notice)", owner).outcome == "200 1000")
            #expect(try await f.names(community, member) == ["채팅 채널:일반", "음성 채널:일반"])
            #expect(try await f.channelMemberships(member, community: community).count == 2)
            #expect(try await f.smooth(.delete, "/category/\(notice)", owner).outcome == "400 4003")
            #expect(try await f.smooth(.delete, "/category/abc", owner).outcome == "400 4003")
        }
    }

    @Test("PATCH /category/location: after next, 0 = first; 4009 already located, 4011 invalid next")
    func categoryLocation() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user()
            let member = try await f.user()
            let community = try await f.shared(owner, member)
            let elsewhere = try await f.community(owner)
            for name in ["C", "B", "A"] {
                #expect(
                    try await f.smooth(.post, "/category", owner, json: #"{"communityId":\#(community),"name":"\#(name)","public":true}"#).outcome == "200 1000"
                )
            }
            let order = { try await f.layout(community, member).map { $0.category["name"] as? String ?? "?" } }
            #expect(try await order() == ["A", "B", "C", "채팅 채널", "음성 채널"])
            let id = { (name: String) in try await f.categoryId(community, owner, named: name) }
            let move = { (user: SmoothFixture.Member, item: Int, next: Int) in
                try await f.smooth(.patch, "/category/location", user, json: #"{"id":\#(item),"next":\#(next)}"#).outcome
            }

            #expect(try await move(member, try await id("A"), try await id("C")) == "200 1000")
            #expect(try await order() == ["B", "C", "A", "채팅 채널", "음성 채널"])
            #expect(try await move(owner, try await id("음성 채널"), 0) == "200 1000")
            #expect(try await order() == ["음성 채널", "B", "C", "A", "채팅 채널"])
            #expect(try await move(owner, try await id("B"), try await id("채팅 채널")) == "200 1000")
            #expect(try await order() == ["음성 채널", "C", "A", "채팅 채널", "B"])

            // Already there.
            #expect(try await move(owner, try await id("음성 채널"), 0) == "400 4009")
            #expect(try await move(owner, try await id("A"), try await id("C")) == "400 4009")
            // Not a valid place: itself, unknown, another community's category.
            let foreign = try await f.categoryId(elsewhere, owner, named: "채팅 채널")
            #expect(try await move(owner, try await id("A"), try await id("A")) == "400 4011")
            #expect(try await move(owner, try await id("A"), 424242) == "400 4011")
            #expect(try await move(owner, try await id("A"), foreign) == "400 4011")
            #expect(try await move(owner, 424242, 0) == "400 4003")
            #expect(try await order() == ["음성 채널", "C", "A", "채팅 채널", "B"])
            #expect(try await f.smooth(.patch, "/category/location", owner, json: #"{"next":0}"#).outcome == "400 4003")
        }
    }

    @Test("POST /channel → the channel (first in its category); private channels are their members'; 4012 public in private")
    func channels() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user()
            let member = try await f.user()
            let friend = try await f.user()
            let other = try await f.user()
            let community = try await f.shared(owner, member, friend, other)
            let text = try await f.categoryId(community, owner, named: "채팅 채널")

            let created = try await f.smooth(.post, "/channel", member, json: #"{"id":\#(text),"name":"잡담","type":"VOICE","public":true}"#)
            #expect(created.outcome == "200 1000")
            let channel = try #require(created.result)
            #expect(Set(channel.keys) == ["id", "categoryId", "username", "name", "type", "public", "parent", "threads"])
            #expect(channel["categoryId"] as? Int == text && channel["type"] as? String == "VOICE" && channel["public"] as? Bool == true)
            #expect(channel["parent"] is NSNull && channel["username"] is NSNull && (channel["threads"] as? [Any])?.isEmpty == true)
            let chatter = try #require(channel["id"] as? Int)
            #expect(try await f.names(community, other) == ["채팅 채널:잡담,일반", "음성 채널:일반"])
            // A public channel is every member's (chat lets them all in).
            for user in [owner, member, friend, other] {
                #expect(try await f.channelMemberships(user, community: community).contains(chatter))
            }

            // Private: visible to (and joined by) the members named, the creator and the owner.
            let secret = try await f.smooth(
                .post, "/channel", member, json: #"{"id":\#(text),"name":"둘만","type":"TEXT","public":false,"members":[\#(friend.id)]}"#)
            #expect(secret.outcome == "200 1000" && secret.result?["public"] as? Bool == false)
            let secretId = try #require(secret.result?["id"] as? Int)
            for user in [owner, member, friend] {
                #expect(try await f.names(community, user).first == "채팅 채널:둘만,잡담,일반")
                #expect(try await f.channelMemberships(user, community: community).contains(secretId))
            }
            #expect(try await f.names(community, other).first == "채팅 채널:잡담,일반")
            #expect(try await !f.channelMemberships(other, community: community).contains(secretId))

            // In a private category channels are private, and their members must be on its list.
            #expect(
                try await f.smooth(.post, "/category", member, json: #"{"communityId":\#(community),"name":"비밀","public":false,"members":[\#(friend.id)]}"#)
                    .outcome == "200 1000")
            let hidden = try await f.categoryId(community, member, named: "비밀")
            #expect(try await f.smooth(.post, "/channel", member, json: #"{"id":\#(hidden),"name":"x","type":"TEXT","public":true}"#).outcome == "400 4012")
            #expect(
                try await f.smooth(.post, "/channel", member, json: #"{"id":\#(hidden),"name":"x","type":"TEXT","public":false,"members":[\#(other.id)]}"#)
                    .outcome == "400 4010")
            #expect(
                try await f.smooth(.post, "/channel", friend, json: #"{"id":\#(hidden),"name":"작전실","type":"TEXT","public":false,"members":[\#(member.id)]}"#)
                    .outcome == "200 1000")
            #expect(try await f.smooth(.post, "/channel", other, json: #"{"id":\#(hidden),"name":"x","type":"TEXT","public":false}"#).outcome == "400 4003")

            // Bad input and unknown categories.
            for bad in [
                #"{"id":\#(text),"name":"x","type":"VIDEO","public":true}"#, #"{"id":\#(text),"name":"x","public":true}"#,
                #"{"id":\#(text),"name":"","type":"TEXT","public":true}"#, #"{"id":"\#(text)","name":"x","type":"TEXT"}"#,
            ] {
                #expect(try await f.smooth(.post, "/channel", member, json: bad).outcome == "400 1400", "\(bad)")
            }
            #expect(try await f.smooth(.post, "/channel", member, json: #"{"id":424242,"name":"x","type":"TEXT","public":true}"#).outcome == "400 4003")
            #expect(
                try await f.smooth(.post, "/channel", try await f.user(), json: #"{"id":\#(text),"name":"x","type":"TEXT","public":true}"#).outcome
                    == "400 4003")
        }
    }

    @Test("PATCH /channel/location: within and across categories; 4009, 4011, 4003, 4004, 4012")
    func channelLocation() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user()
            let member = try await f.user()
            let community = try await f.shared(owner, member)
            let text = try await f.categoryId(community, owner, named: "채팅 채널")
            let voice = try await f.categoryId(community, owner, named: "음성 채널")
            for name in ["c", "b", "a"] {
                #expect(
                    try await f.smooth(.post, "/channel", owner, json: #"{"id":\#(text),"name":"\#(name)","type":"TEXT","public":true}"#).outcome == "200 1000")
            }
            #expect(try await f.names(community, member) == ["채팅 채널:a,b,c,일반", "음성 채널:일반"])
            let id = { (name: String, type: String) in try await f.channelId(community, owner, named: name, type: type) }
            let move = { (item: Int, next: Int, category: Int) in
                try await f.smooth(.patch, "/channel/location", member, json: #"{"id":\#(item),"next":\#(next),"categoryId":\#(category)}"#).outcome
            }

            #expect(try await move(try await id("a", "TEXT"), try await id("c", "TEXT"), text) == "200 1000")
            #expect(try await f.names(community, member) == ["채팅 채널:b,c,a,일반", "음성 채널:일반"])
            #expect(try await move(try await id("일반", "TEXT"), 0, text) == "200 1000")
            #expect(try await f.names(community, member) == ["채팅 채널:일반,b,c,a", "음성 채널:일반"])
            // Across categories: after the voice channel, then first there.
            #expect(try await move(try await id("c", "TEXT"), try await id("일반", "VOICE"), voice) == "200 1000")
            #expect(try await f.names(community, member) == ["채팅 채널:일반,b,a", "음성 채널:일반,c"])
            #expect(try await move(try await id("b", "TEXT"), 0, voice) == "200 1000")
            #expect(try await f.names(community, owner) == ["채팅 채널:일반,a", "음성 채널:b,일반,c"])

            #expect(try await move(try await id("b", "TEXT"), 0, voice) == "400 4009")
            #expect(try await move(try await id("c", "TEXT"), try await id("일반", "VOICE"), voice) == "400 4009")
            #expect(try await move(try await id("a", "TEXT"), try await id("일반", "VOICE"), text) == "400 4011")  // next in another category
            #expect(try await move(try await id("a", "TEXT"), try await id("a", "TEXT"), text) == "400 4011")
            #expect(try await move(try await id("a", "TEXT"), 424242, text) == "400 4011")
            #expect(try await move(try await id("a", "TEXT"), 0, 424242) == "400 4003")
            #expect(try await move(424242, 0, text) == "400 4004")
            #expect(try await f.names(community, owner) == ["채팅 채널:일반,a", "음성 채널:b,일반,c"])

            // A public channel does not move into a private category.
            #expect(try await f.smooth(.post, "/category", member, json: #"{"communityId":\#(community),"name":"비밀","public":false}"#).outcome == "200 1000")
            let hidden = try await f.categoryId(community, member, named: "비밀")
            #expect(try await move(try await id("a", "TEXT"), 0, hidden) == "400 4012")
        }
    }

    @Test("DELETE /channel/{id}: the owner's; 4004 for unknown or unseen channels")
    func deleteChannel() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user()
            let member = try await f.user()
            let community = try await f.shared(owner, member)
            let text = try await f.categoryId(community, owner, named: "채팅 채널")
            let made = try await f.smooth(.post, "/channel", member, json: #"{"id":\#(text),"name":"곧 삭제","type":"TEXT","public":true}"#)
            let channel = try #require(made.result?["id"] as? Int)
            #expect(try await f.smooth(.delete, "/channel/\(channel)", member).outcome == "400 1401")
            let deleted = try await f.smooth(.delete, "/channel/\(channel)", owner)
            #expect(deleted.outcome == "200 1000" && deleted.result == nil)
            #expect(try await f.names(community, member) == ["채팅 채널:일반", "음성 채널:일반"])
            #expect(try await f.smooth(.delete, "/channel/\(channel)", owner).outcome == "400 4004")
            #expect(try await f.smooth(.delete, "/channel/x", owner).outcome == "400 4004")
            #expect(try await f.smooth(.delete, "/channel/\(try await f.channelId(community, owner, named: "일반"))", try await f.user()).outcome == "400 4004")
        }
    }

    @Test("POST /channel/thread: threads listed under their channel {id, name}, with its members and privacy; refusals; deleted with it")
    func threads() async throws {
        try await Stack.smoothCommunities { f in
            let owner = try await f.user()
            let member = try await f.user("스레드장")
            let friend = try await f.user()
            let other = try await f.user()
            let community = try await f.shared(owner, member, friend, other)
            let general = try await f.channelId(community, owner, named: "일반")
            let voice = try await f.channelId(community, owner, named: "일반", type: "VOICE")

            let made = try await f.smooth(.post, "/channel/thread", member, json: #"{"id":\#(general),"name":"공지 토론"}"#)
            #expect(made.outcome == "200 1000", "\(made.body)")
            let thread = try #require(made.result)
            #expect(Set(thread.keys) == ["id", "categoryId", "username", "name", "type", "public", "parent", "threads"])
            #expect(thread["parent"] as? Int == general && thread["username"] as? String == "스레드장" && thread["type"] as? String == "TEXT")
            #expect(thread["categoryId"] as? Int == (try await f.categoryId(community, owner, named: "채팅 채널")))
            let threadId = try #require(thread["id"] as? Int)
            let second = try #require(try await f.smooth(.post, "/channel/thread", owner, json: #"{"id":\#(general),"name":"둘째"}"#).result?["id"] as? Int)

            // The layout: threads under their channel, not beside it; the channel's parent stays null.
            let channels = try await f.layout(community, other).flatMap(\.channels)
            #expect(channels.map { $0["name"] as? String } == ["일반", "일반"])
            let listed = try #require(channels.first { $0["id"] as? Int == general })
            #expect(listed["parent"] is NSNull)
            let threads = try #require(listed["threads"] as? [[String: Any]])
            #expect(threads.map { Set($0.keys) } == [["id", "name"], ["id", "name"]])
            #expect(threads.map { $0["id"] as? Int } == [threadId, second] && threads.first?["name"] as? String == "공지 토론")
            // Every member of the public channel is in its threads (chat lets them in).
            for user in [owner, member, friend, other] {
                #expect(try await f.channelMemberships(user, community: community).isSuperset(of: [threadId, second]))
            }

            // A private channel's thread is its members' only.
            let secret = try #require(
                try await f.smooth(
                    .post, "/channel", member,
                    json:
                        #"{"id":\#(try await f.categoryId(community, owner, named: "채팅 채널")),"name":"둘만","type":"TEXT","public":false,"members":[\#(friend.id)]}"#
                ).result?["id"] as? Int)
            let hidden = try #require(try await f.smooth(.post, "/channel/thread", friend, json: #"{"id":\#(secret),"name":"비밀 스레드"}"#).result)
            #expect(hidden["public"] as? Bool == false)
            let hiddenId = try #require(hidden["id"] as? Int)
            for user in [owner, member, friend] {
                #expect(try await f.channelMemberships(user, community: community).contains(hiddenId))
            }
            #expect(try await !f.channelMemberships(other, community: community).contains(hiddenId))
            #expect(try await f.smooth(.post, "/channel/thread", other, json: #"{"id":\#(secret),"name":"끼어들기"}"#).outcome == "400 4004")
            #expect(try await f.smooth(.patch, "/channel/location", owner, json: #"{"id":\#(threadId),"next":0,"categoryId":0}"#).outcome == "400 4004")

            // Refusals: nesting, voice channels, a name the channel's threads have, bad bodies.
            for (body, expected) in [
                (#"{"id":\#(threadId),"name":"더 깊이"}"#, "400 1400"),
                (#"{"id":\#(voice),"name":"음성 스레드"}"#, "400 1400"),
                (#"{"id":\#(general),"name":"공지 토론"}"#, "400 1400"),
                (#"{"id":\#(general),"name":""}"#, "400 1400"),
                ("{\"id\":\(general),\"name\":\"\(String(repeating: "가", count: 101))\"}", "400 1400"),
                (#"{"id":"x","name":"a"}"#, "400 1400"),
                (#"{"id":424242,"name":"a"}"#, "400 4004"),
            ] {
                #expect(try await f.smooth(.post, "/channel/thread", member, json: body).outcome == expected, "\(body)")
            }
            #expect(try await f.smooth(.post, "/channel/thread", nil, json: #"{"id":\#(general),"name":"a"}"#).outcome == "401")

            // A thread's creator may delete it; a member may not delete someone else's.
            #expect(try await f.smooth(.delete, "/channel/\(second)", member).outcome == "400 1401")
            #expect(try await f.smooth(.delete, "/channel/\(threadId)", member).outcome == "200 1000")
            // Deleting the channel takes its threads.
            #expect(try await f.smooth(.delete, "/channel/\(secret)", owner).outcome == "200 1000")
            #expect(try await f.smooth(.delete, "/channel/\(hiddenId)", owner).outcome == "400 4004")
            let after = try await f.layout(community, owner).flatMap(\.channels)
            #expect(after.flatMap { ($0["threads"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? Int } } == [second])
        }
    }
}
