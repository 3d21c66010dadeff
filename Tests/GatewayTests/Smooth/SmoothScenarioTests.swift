import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import SuiteTesting
import Testing

@testable import GatewayApp

/// Smooth's client end to end (issue 18's scenario), on its own surfaces only: `/auth-server`,
/// `/community-server`, `/chat-server` and STOMP, against real PostgreSQL, Kafka (embedded) and
/// the real chat-fanout, with a fake SMTP relay for the email code.
@Suite("Smooth end to end", .serialized)
struct SmoothScenarioTests {
    @Test(
        "sign-up → verify email → sign-in → community → categories and channels reordered → invite by code → join → friends → STOMP subscribe → send, modify, reply, delete → page history → thread → group room"
    )
    func scenario() async throws {
        try await FakeSMTPServer.with { smtp async throws in
            let auth = StackService.auth(env: ["AUTH_SMTP_HOST": "127.0.0.1", "AUTH_SMTP_PORT": String(smtp.port), "AUTH_SMTP_FROM": "noreply@smooth.test"])
            try await Stack.run(services: [auth, .workspace, .chat], gateway: ["GATEWAY_ID": "gw-smooth-\(UUID().uuidString.prefix(6))"]) { s in
                let replica = try await RealFanoutTests.startReplica(s, "fanout-smooth")

                // 1. Sign-up with a verified email, then sign-in (the chat server's url comes back).
                let email = "owner\(UUID().uuidString.prefix(6))@example.com"
                #expect(try await s.smooth(.post, "/auth-server/send-mail?email=\(email)").outcome == "200 1000")
                let code = try #require(try await smtp.message(to: email).code)
                #expect(try await s.smooth(.get, "/auth-server/check-email?key=\(code)").outcome == "200 1000")
                let signUp = try await s.smooth(.post, "/auth-server/sign-up", json: #"{"email":"\#(email)","password":"password1","name":"주인"}"#)
                #expect(signUp.outcome == "200 1000", "\(signUp.body)")
                let signIn = try await s.smooth(
                    .post, "/auth-server/sign-in", json: #"{"email":"\#(email)","password":"password1","type":"ios","deviceToken":"abc123"}"#)
                #expect(signIn.outcome == "200 1000", "\(signIn.body)")
                let result = try #require(signIn.result)
                #expect((result["url"] as? String)?.hasPrefix("http://") == true)
                let owner = Stack.SmoothUser(
                    id: try #require(result["id"] as? Int), email: email, name: "주인", code: try #require(result["code"] as? String),
                    token: try #require(result["accessToken"] as? String))
                let guest = try await s.smoothUser(name: "손님")

                // 2. A community, a category and two channels, reordered.
                let created = try await s.smoothMultipart(
                    .post, "/community-server/community", owner, fields: ["name": "우리 서버", "public": "true"], fileField: "icon")
                #expect(created.outcome == "200 1000", "\(created.body)")
                let community = try #require(created.result?["id"] as? Int)
                let category = try await s.smooth(
                    .post, "/community-server/category", owner, json: #"{"communityId":\#(community),"name":"잡담","public":true}"#)
                #expect(category.outcome == "200 1000", "\(category.body)")
                func layout() async throws -> [[String: Any]] {
                    try #require(try await s.smooth(.get, "/community-server/community/\(community)", owner).result?["categories"] as? [[String: Any]])
                }
                let chatter = try #require(try await layout().first { $0["name"] as? String == "잡담" }?["id"] as? Int)
                for name in ["하나", "둘"] {
                    let channel = try await s.smooth(
                        .post, "/community-server/channel", owner, json: #"{"id":\#(chatter),"name":"\#(name)","type":"TEXT","public":true}"#)
                    #expect(channel.outcome == "200 1000", "\(channel.body)")
                }
                func channels() async throws -> [[String: Any]] {
                    try await layout().first { $0["id"] as? Int == chatter }?["channels"] as? [[String: Any]] ?? []
                }
                #expect(try await channels().map { $0["name"] as? String } == ["둘", "하나"], "new channels go first")
                let one = try #require(try await channels().first { $0["name"] as? String == "하나" }?["id"] as? Int)
                #expect(
                    try await s.smooth(.patch, "/community-server/channel/location", owner, json: #"{"id":\#(one),"next":0,"categoryId":\#(chatter)}"#)
                        .outcome == "200 1000")
                #expect(try await channels().map { $0["name"] as? String } == ["하나", "둘"])
                // New categories go first too: move it after the last one (linked-list "after next").
                #expect(try await layout().first?["id"] as? Int == chatter)
                let last = try #require(try await layout().last?["id"] as? Int)
                #expect(
                    try await s.smooth(.patch, "/community-server/category/location", owner, json: #"{"id":\#(chatter),"next":\#(last)}"#).outcome
                        == "200 1000")
                #expect(try await layout().last?["id"] as? Int == chatter, "the category moved last")
                #expect(
                    try await s.smooth(.patch, "/community-server/category/location", owner, json: #"{"id":\#(chatter),"next":\#(last)}"#).outcome
                        == "400 4009", "already there")

                // 3. Invite by code; the guest joins.
                let invitation = try await s.smooth(.post, "/community-server/community/invitation", owner, json: #"{"id":\#(community)}"#)
                let url = try #require(invitation.result?["url"] as? String)
                #expect(url.contains("/invite/c/"))
                let code2 = String(url.split(separator: "/").last ?? "")
                let joined = try await s.smooth(.post, "/community-server/community/member", guest, json: #"{"code":"\#(code2)"}"#)
                #expect(joined.outcome == "200 1000" && joined.result?["id"] as? Int == community, "\(joined.body)")
                let members = try await s.smooth(.get, "/community-server/community/\(community)/member", owner)
                let roles = (members.result?["members"] as? [[String: Any]] ?? []).compactMap { $0["role"] as? String }.sorted()
                #expect(roles == ["NONE", "OWNER"])

                // 4. Friends by name#code.
                #expect(
                    try await s.smooth(.post, "/auth-server/auth/friend", owner, json: #"{"name":"\#(guest.name)","code":"\#(guest.code)"}"#).outcome
                        == "200 1000")
                let pending = try await s.smooth(.get, "/auth-server/auth/friend", guest)
                let request = try #require((pending.envelope?["result"] as? [[String: Any]])?.first)
                #expect(request["state"] as? String == "WAIT" && request["userId"] as? Int == owner.id)
                let friendship = try #require(request["id"] as? Int)
                #expect(try await s.smooth(.patch, "/auth-server/auth/friend?id=\(friendship)", guest).outcome == "200 1000")
                let friends = try await s.smooth(.get, "/auth-server/auth/friend", owner)
                #expect((friends.envelope?["result"] as? [[String: Any]])?.first?["state"] as? String == "ACCEPT")

                // 5. STOMP with integer ids: the guest subscribes, the owner sends, modifies, replies, deletes.
                let port = try #require(s.client.port)
                let channelAlias = try #require(try await channels().first { $0["name"] as? String == "하나" }?["id"] as? Int)
                let receiver = try await StompTestClient.connected(port: port, token: guest.token, userId: String(guest.id))
                try await receiver.subscribe("/topic/group/\(channelAlias)", id: "sub-0")
                let sender = try await StompTestClient.connected(port: port, token: owner.token, userId: String(owner.id))
                func send(_ destination: String, _ body: String) { sender.send(to: destination, body) }
                send("/kafka/send-channel-message", #"{"content":"안녕","channelId":\#(channelAlias),"userId":\#(owner.id),"name":"주인"}"#)
                _ = try await receiver.waitFor("the message") { _ in receiver.messages.contains { $0["message"] as? String == "안녕" } }
                let hello = try #require(receiver.messages.first { $0["message"] as? String == "안녕" })
                #expect(hello["type"] as? String == "message" && hello["userId"] as? String == String(owner.id))
                #expect(hello["channelId"] as? String == String(channelAlias) && hello["name"] as? String == "주인")
                let helloId = try #require(hello["id"] as? String)
                send(
                    "/kafka/send-channel-modify", #"{"id":"\#(helloId)","content":"안녕하세요","userId":\#(owner.id),"type":"modify","channelId":\#(channelAlias)}"#)
                _ = try await receiver.waitFor("the edit") { _ in receiver.messages.contains { $0["type"] as? String == "modify" } }
                let modify = try #require(receiver.messages.first { $0["type"] as? String == "modify" })
                #expect(modify["id"] as? String == helloId && modify["message"] as? String == "안녕하세요" && modify["userId"] as? String == String(owner.id))
                send("/kafka/send-channel-reply", #"{"content":"답장","channelId":\#(channelAlias),"userId":\#(owner.id),"parentId":"\#(helloId)"}"#)
                _ = try await receiver.waitFor("the reply") { _ in receiver.messages.contains { $0["type"] as? String == "reply" } }
                let reply = try #require(receiver.messages.first { $0["type"] as? String == "reply" })
                #expect(reply["parentName"] as? String == "주인" && reply["parentContent"] as? String == "안녕하세요")
                send("/kafka/send-channel-message", #"{"content":"지울 것","channelId":\#(channelAlias),"userId":\#(owner.id)}"#)
                _ = try await receiver.waitFor("the second message") { _ in receiver.messages.contains { $0["message"] as? String == "지울 것" } }
                let doomed = try #require(receiver.messages.first { $0["message"] as? String == "지울 것" }?["id"] as? String)
                send("/kafka/send-channel-delete", #"{"id":"\#(doomed)","userId":\#(owner.id),"type":"delete","channelId":\#(channelAlias)}"#)
                _ = try await receiver.waitFor("the deletion") { _ in receiver.messages.contains { $0["type"] as? String == "delete" } }
                #expect(receiver.messages.first { $0["type"] as? String == "delete" }?["id"] as? String == doomed)

                // Someone else's id in a SEND is refused (ERROR, then close), and nothing is stored.
                let impostor = try await StompTestClient.connected(port: port, token: guest.token, userId: String(guest.id))
                impostor.send(to: "/kafka/send-channel-message", #"{"content":"가짜","channelId":\#(channelAlias),"userId":\#(owner.id)}"#)
                #expect(try await impostor.waitFor(.error).headers["message"] == "userId is not the connected user")
                // Communities by their integer id: members subscribe, a signal names the community
                // by alias; someone outside is refused.
                try await receiver.subscribe("/topic/community/\(community)", id: "sub-c")
                send("/kafka/community-signaling", #"{"user_id":\#(owner.id),"type":"before-enter","community_id":\#(community)}"#)
                _ = try await receiver.waitFor("the community signal") { _ in receiver.messages.contains { $0["type"] as? String == "before-enter" } }
                let outsider = try await s.smoothUser(name: "남남이")
                let stranger = try await StompTestClient.connected(port: port, token: outsider.token, userId: String(outsider.id))
                stranger.send("SUBSCRIBE\nid:s\ndestination:/topic/community/\(community)\n\n\0")
                #expect(try await stranger.waitFor(.error).headers["message"] == "not a member of /topic/community/\(community)")

                // 6. History by page, as the app reads it (no token): the edit, the reply, not the deleted one.
                let page = try await s.smooth(.get, "/chat-server/community?ch_id=\(channelAlias)&page=0&size=20")
                let items = try #require(page.envelope?["result"] as? [[String: Any]])
                #expect(items.compactMap { $0["message"] as? String } == ["안녕하세요", "답장"])
                #expect(items.last?["fileType"] as? String == "reply" && items.last?["parentContent"] as? String == "안녕하세요")
                #expect(items.allSatisfy { $0["userId"] as? Int == owner.id })

                // 7. A thread under the channel, listed in the layout and chatted in like a channel.
                let thread = try await s.smooth(.post, "/community-server/channel/thread", guest, json: #"{"id":\#(channelAlias),"name":"후기"}"#)
                #expect(thread.outcome == "200 1000" && thread.result?["parent"] as? Int == channelAlias, "\(thread.body)")
                let threadAlias = try #require(thread.result?["id"] as? Int)
                let listed = try await channels().first { $0["id"] as? Int == channelAlias }?["threads"] as? [[String: Any]]
                #expect(listed?.compactMap { $0["id"] as? Int } == [threadAlias] && listed?.first?["name"] as? String == "후기")
                // Chat learns the thread's members from workspace.v1 before STOMP lets them in.
                for member in [try await s.v1User(owner), try await s.v1User(guest)] {
                    try await s.waitForChatMember(member.id, channelAlias: threadAlias)
                }
                try await receiver.subscribe("/topic/group/\(threadAlias)", id: "sub-t")
                // A topic subscribed a moment ago: the fan-out learns the gateway's interest through
                // Kafka, so the first sends may go nowhere; send until one arrives.
                func sendUntilReceived(_ destination: String, _ body: (Int) -> String, _ arrived: @escaping ([String: Any]) -> Bool) async throws -> Int {
                    var sent = 0
                    try await eventually("\(destination) reaches the subscriber", timeout: .seconds(60)) {
                        sent += 1
                        send(destination, body(sent))
                        try await Task.sleep(for: .milliseconds(300))
                        return receiver.messages.contains(where: arrived)
                    }
                    return sent
                }
                _ = try await sendUntilReceived(
                    "/kafka/send-channel-message", { #"{"content":"스레드에서 \#($0)","channelId":\#(threadAlias),"userId":\#(owner.id),"name":"주인"}"# }
                ) { ($0["message"] as? String)?.hasPrefix("스레드에서") == true && $0["channelId"] as? String == String(threadAlias) }

                // 8. A group room of friends: STOMP on /topic/direct/{id}, its history by page.
                let third = try await s.smoothUser(name: "셋째")
                try await s.befriend(owner, third)
                var group: SmoothAnswer?
                try await eventually("chat knows the owner's friends") {
                    group = try await s.smooth(.post, "/community-server/room", owner, json: #"{"members":[\#(guest.id),\#(third.id)],"name":"우리 방"}"#)
                    return group?.outcome == "200 1000"
                }
                let room = try #require(group?.result)
                #expect(room["group"] as? Bool == true && room["name"] as? String == "우리 방" && (room["members"] as? [Any])?.count == 3)
                let roomAlias = try #require(room["id"] as? Int)
                try await receiver.subscribe("/topic/direct/\(roomAlias)", id: "sub-r")
                let sent = try await sendUntilReceived(
                    "/kafka/send-direct-message", { #"{"content":"환영해 \#($0)","channelId":\#(roomAlias),"userId":\#(owner.id),"name":"주인"}"# }
                ) { ($0["message"] as? String)?.hasPrefix("환영해") == true }
                // Every send is stored, delivered or not: the page holds them all, oldest first.
                try await eventually("the room's history holds every send") {
                    let page = try await s.smooth(.get, "/chat-server/direct?ch_id=\(roomAlias)&page=0&size=20")
                    return (page.envelope?["result"] as? [[String: Any]])?.compactMap { $0["message"] as? String } == (1...sent).map { "환영해 \($0)" }
                }
                await receiver.stop()
                await sender.stop()
                await impostor.stop()
                await stranger.stop()
                try await replica.stop()
            }
        }
    }
}
