import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import PostgresNIO
import SuiteTesting
import Events
import Kafka
import TestSupport
import Testing

@testable import GatewayApp

/// Personal rooms (friends' rooms and groups, outside workspaces) through Smooth's surfaces and
/// `/v1/rooms`, against real PostgreSQL, the embedded Kafka and the real chat-fanout.
@Suite("Personal rooms", .serialized)
struct SmoothRoomTests {
    @Test(
        "friends' room: opened once per pair, listed, STOMP both ways, history without a token, unread rooms on the home screen until read; strangers refused"
    )
    func friendsRoom() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: ["GATEWAY_ID": "gw-rooms-\(UUID().uuidString.prefix(6))"]) { s in
            let replica = try await RealFanoutTests.startReplica(s, "fanout-rooms")
            let a = try await s.smoothUser(name: "가영")
            let b = try await s.smoothUser(name: "나래")
            let stranger = try await s.smoothUser(name: "다른이")
            try await s.befriend(a, b)

            // Opening is idempotent: both sides at once get one room, and asking again returns it.
            async let fromA = s.smooth(.post, "/community-server/room", a, json: #"{"members":[\#(b.id)]}"#)
            async let fromB = s.smooth(.post, "/community-server/room", b, json: #"{"members":[\#(a.id)]}"#)
            let (first, second) = try await (fromA, fromB)
            #expect(first.outcome == "200 1000" && second.outcome == "200 1000", "\(first.body) \(second.body)")
            #expect(first.result?["id"] as? Int == second.result?["id"] as? Int)
            let opened = try await s.smooth(.post, "/community-server/room", a, json: #"{"members":[\#(b.id)]}"#)
            #expect(opened.outcome == "200 1000", "\(opened.body)")
            let room = try #require(opened.result)
            let roomId = try #require(room["id"] as? Int)
            #expect(Set(room.keys) == ["id", "group", "count", "name", "members"])
            #expect(room["group"] as? Bool == false && room["count"] as? Int == 2 && room["name"] as? String == "나래")
            let members = try #require(room["members"] as? [[String: Any]])
            #expect(Set(members.compactMap { $0["id"] as? Int }) == [a.id, b.id])
            #expect(members.allSatisfy { Set($0.keys) == ["id", "nickname", "image", "code", "owner", "state"] && $0["owner"] as? Bool == false })
            #expect(try await s.smooth(.post, "/community-server/room", b, json: #"{"members":[\#(a.id)]}"#).result?["id"] as? Int == roomId)

            let list = try #require(try await s.smooth(.get, "/community-server/room", a).result?["rooms"] as? [[String: Any]])
            #expect(list.count == 1)
            let listed = try #require(list.first)
            #expect(Set(listed.keys) == ["id", "group", "members", "count", "name", "icon", "state", "createdAt"])
            #expect(listed["id"] as? Int == roomId && listed["name"] as? String == "나래" && listed["state"] as? String == "offline")
            #expect((listed["createdAt"] as? String)?.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$"#, options: .regularExpression) != nil)

            // The friend's status is chat's projection of presence.v1 (here the event presence would publish).
            let bId = try await s.v1User(b).id
            let producer = try TestKafka.producer(s.cluster)
            let online = CloudEvent(
                source: "presence", data: PresenceEvents.StatusChanged(userId: try #require(UserID(bId)), status: .online, lastSeen: Date(), workspaceIds: []))
            _ = try await producer.sendAndAwait(
                KafkaProducerMessage(
                    topic: Topic.presence.name, key: Array(bId.utf8), value: try EventCoding.encode(online),
                    headers: [KafkaHeader(key: CloudEventKafkaHeader.type, string: PresenceEvents.StatusChanged.eventType)]))
            try await eventually("the friend shows online") {
                let rooms = try await s.smooth(.get, "/community-server/room", a).result?["rooms"] as? [[String: Any]]
                return rooms?.first?["state"] as? String == "online"
            }
            let detail = try #require(try await s.smooth(.get, "/community-server/room/\(roomId)", a).result?["members"] as? [[String: Any]])
            #expect(detail.first { $0["id"] as? Int == b.id }?["state"] as? String == "online")
            #expect(detail.first { $0["id"] as? Int == a.id }?["state"] as? String == "offline")

            // Refusals: a stranger's room is 4018; opening with a non-friend 4007, nobody 4021, oneself 4020.
            #expect(try await s.smooth(.get, "/community-server/room/\(roomId)", stranger).outcome == "400 4018")
            #expect(try await s.smooth(.post, "/community-server/room", a, json: #"{"members":[\#(stranger.id)]}"#).outcome == "400 4007")
            #expect(try await s.smooth(.post, "/community-server/room", a, json: #"{"members":[]}"#).outcome == "400 4021")
            #expect(try await s.smooth(.post, "/community-server/room", a, json: #"{"members":[\#(a.id)]}"#).outcome == "400 4020")
            #expect(try await s.smooth(.post, "/community-server/room", a, json: #"{"members":"#).outcome == "400 1400")
            #expect(try await s.smooth(.patch, "/community-server/room/name", a, json: #"{"id":\#(roomId),"name":"우리"}"#).outcome == "400 4019")

            // STOMP: b follows the room by its integer id, a writes; a stranger cannot follow it.
            let port = try #require(s.client.port)
            let receiver = try await StompTestClient.connected(port: port, token: b.token, userId: String(b.id))
            try await receiver.subscribe("/topic/direct/\(roomId)", id: "d")
            let sender = try await StompTestClient.connected(port: port, token: a.token, userId: String(a.id))
            sender.send(to: "/kafka/send-direct-message", #"{"content":"안녕 나래","channelId":\#(roomId),"userId":\#(a.id),"name":"가영"}"#)
            _ = try await receiver.waitFor("the direct message") { _ in receiver.messages.contains { $0["message"] as? String == "안녕 나래" } }
            let hello = try #require(receiver.messages.first { $0["message"] as? String == "안녕 나래" })
            #expect(hello["type"] as? String == "message" && hello["userId"] as? String == String(a.id) && hello["channelId"] as? String == String(roomId))
            let outsider = try await StompTestClient.connected(port: port, token: stranger.token, userId: String(stranger.id))
            outsider.send("SUBSCRIBE\nid:x\ndestination:/topic/direct/\(roomId)\n\n\0")
            #expect(try await outsider.waitFor(.error).headers["message"] == "not a member of /topic/direct/\(roomId)")

            // History as the app reads it (no token), and the home screen's unread rooms.
            let history = try #require(try await s.smooth(.get, "/chat-server/direct?ch_id=\(roomId)&page=0&size=20").resultArray)
            #expect(history.compactMap { $0["message"] as? String } == ["안녕 나래"])
            #expect(try await s.smooth(.get, "/chat-server/direct?ch_id=\(roomId)&page=0&size=20", stranger).outcome == "400 4004")
            let homeAnswer = try await s.smooth(.get, "/community-server/community", b)
            #expect(homeAnswer.outcome == "200 1000" && homeAnswer.isSuccess && homeAnswer.envelope?["message"] as? String == "요청에 성공하였습니다.")
            let home = try #require(homeAnswer.result)
            let unread = try #require(home["rooms"] as? [[String: Any]])
            #expect(unread.count == 1 && unread.first?["id"] as? Int == roomId && unread.first?["count"] as? Int == 1)
            #expect(unread.first?["name"] as? String == "가영" && (home["communities"] as? [Any])?.isEmpty == true)
            #expect((try await s.smooth(.get, "/community-server/community", a).result?["rooms"] as? [Any])?.isEmpty == true)
            // Entering the room marks it read (STOMP `join-channel` with `r-{id}`).
            receiver.send(to: "/kafka/join-channel", #"{"user_id":\#(b.id),"type":"state","channel_id":"r-\#(roomId)"}"#)
            try await eventually("the room is read") {
                (try await s.smooth(.get, "/community-server/community", b).result?["rooms"] as? [Any])?.isEmpty == true
            }

            // Closing hides the room from the closer's list until the next message; closing for
            // someone else is 1401.
            #expect(try await s.smooth(.delete, "/community-server/room/\(roomId)/member?id=\(a.id)", b).outcome == "400 1401")
            #expect(try await s.smooth(.delete, "/community-server/room/\(roomId)/member?id=\(b.id)", b).outcome == "200 1000")
            #expect((try await s.smooth(.get, "/community-server/room", b).result?["rooms"] as? [Any])?.isEmpty == true)
            sender.send(to: "/kafka/send-direct-message", #"{"content":"또 안녕","channelId":\#(roomId),"userId":\#(a.id)}"#)
            _ = try await receiver.waitFor("the next message") { _ in receiver.messages.contains { $0["message"] as? String == "또 안녕" } }
            #expect((try await s.smooth(.get, "/community-server/room", b).result?["rooms"] as? [Any])?.count == 1)

            // A ban ends the conversation: the banned side's message is refused, nothing is stored.
            let friendships = try #require(try await s.smooth(.get, "/auth-server/auth/friend", b).resultArray)
            let friendship = try #require(friendships.first { $0["userId"] as? Int == a.id }?["id"] as? Int)
            #expect(try await s.smooth(.patch, "/auth-server/auth/ban-friend?id=\(friendship)", b).outcome == "200 1000")
            let chat = try #require(s.chatDatabase)
            try await eventually("chat knows the ban") {
                for try await _ in try await chat.query("SELECT 1 FROM friendships WHERE state = 'banned'") { return true }
                return false
            }
            sender.send(to: "/kafka/send-direct-message", #"{"content":"차단 후","channelId":\#(roomId),"userId":\#(a.id)}"#)
            #expect(try await sender.waitFor(.error).headers["message"] == "E14")
            let after = try #require(try await s.smooth(.get, "/chat-server/direct?ch_id=\(roomId)&page=0&size=20", b).resultArray)
            #expect(after.compactMap { $0["message"] as? String } == ["안녕 나래", "또 안녕"])
            await receiver.stop()
            await sender.stop()
            await outsider.stop()
            try await replica.stop()
        }
    }

    @Test("group: created with friends, renamed, icon without a token, invitation link, owner hand-over, a removed member's subscription ends")
    func group() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: ["GATEWAY_ID": "gw-group-\(UUID().uuidString.prefix(6))"]) { s in
            let replica = try await RealFanoutTests.startReplica(s, "fanout-group")
            let owner = try await s.smoothUser(name: "방장")
            let b = try await s.smoothUser(name: "둘째")
            let c = try await s.smoothUser(name: "셋째")
            let guest = try await s.smoothUser(name: "손님")
            try await s.befriend(owner, b)
            try await s.befriend(owner, c)

            let created = try await s.smooth(.post, "/community-server/room", owner, json: #"{"members":[\#(b.id),\#(c.id)]}"#)
            #expect(created.outcome == "200 1000", "\(created.body)")
            let group = try #require(created.result)
            let groupId = try #require(group["id"] as? Int)
            #expect(group["group"] as? Bool == true && group["count"] as? Int == 3 && group["name"] as? String == "방장, 둘째, 셋째")
            let members = try #require(group["members"] as? [[String: Any]])
            #expect(members.compactMap { $0["id"] as? Int } == [owner.id, b.id, c.id])
            #expect(members.compactMap { $0["owner"] as? Bool } == [true, false, false])

            // Any member renames; 1–100 characters on one line.
            #expect(try await s.smooth(.patch, "/community-server/room/name", b, json: #"{"id":\#(groupId),"name":"스터디"}"#).outcome == "200 1000")
            #expect(try await s.smooth(.get, "/community-server/room/\(groupId)", c).result?["name"] as? String == "스터디")
            #expect(try await s.smooth(.patch, "/community-server/room/name", b, json: #"{"id":\#(groupId),"name":""}"#).outcome == "400 1400")
            // Limits in characters and in bytes: 100 Hangul syllables (300 bytes) pass, 101 do not;
            // one letter with 500 combining accents is one character but 1 001 bytes.
            let hundred = String(repeating: "가", count: 100)
            #expect(try await s.smooth(.patch, "/community-server/room/name", b, json: #"{"id":\#(groupId),"name":"\#(hundred)"}"#).outcome == "200 1000")
            #expect(try await s.smooth(.patch, "/community-server/room/name", b, json: #"{"id":\#(groupId),"name":"\#(hundred)가"}"#).outcome == "400 1400")
            let heavy = "a" + String(repeating: "\u{301}", count: 500)
            #expect(try await s.smooth(.patch, "/community-server/room/name", b, json: #"{"id":\#(groupId),"name":"\#(heavy)"}"#).outcome == "400 1400")
            #expect(try await s.smooth(.patch, "/community-server/room/name", b, json: #"{"id":"\#(groupId)","name":1}"#).outcome == "400 1400")
            let many = (1...101).map(String.init).joined(separator: ",")
            #expect(try await s.smooth(.post, "/community-server/room/member", owner, json: #"{"id":\#(groupId),"members":[\#(many)]}"#).outcome == "400 1400")

            // The icon is loaded by URL, without a token; a text file is refused.
            #expect(
                try await s.smoothMultipart(.patch, "/community-server/room/icon", owner, fields: ["id": String(groupId)], file: pngBytes, fileField: "icon")
                    .outcome == "200 1000")
            #expect(
                try await s.smoothMultipart(
                    .patch, "/community-server/room/icon", owner, fields: ["id": String(groupId)], file: Array("hello".utf8), fileField: "icon",
                    contentType: "text/plain"
                ).outcome == "400 1400")
            let listed = try #require((try await s.smooth(.get, "/community-server/room", c).result?["rooms"] as? [[String: Any]])?.first)
            let icon = try #require(listed["icon"] as? String)
            let path = try #require(icon.range(of: "/community-server/room/icons/").map { String(icon[$0.lowerBound...]) })
            let image = try await s.client.execute(uri: path, method: .get)
            #expect(image.status == .ok && Array(buffer: image.body) == pngBytes)
            #expect(try await s.client.execute(uri: "/community-server/room/icons/not-an-icon.png", method: .get).status == .badRequest)

            // Unfriending ends what friendship allows: c can no longer be put in a room by the owner.
            let ownersFriends = try #require(try await s.smooth(.get, "/auth-server/auth/friend", c).resultArray)
            let cAndOwner = try #require(ownersFriends.first { $0["userId"] as? Int == owner.id }?["id"] as? Int)
            #expect(try await s.smooth(.delete, "/auth-server/auth/friend?id=\(cAndOwner)", c).outcome == "200 1000")
            let chat = try #require(s.chatDatabase)
            // Both sides: the owner's row (owner → c) is the one a room check reads, and it comes in
            // an event of its own (keyed by the owner), not with c's.
            try await eventually("chat forgets the friendship") {
                for try await _ in try await chat.query(
                    "SELECT 1 FROM friendships f JOIN user_profiles p ON p.user_id IN (f.user_id, f.friend_id) WHERE p.alias = \(Int64(c.id))")
                {
                    return false
                }
                return true
            }
            #expect(try await s.smooth(.post, "/community-server/room", owner, json: #"{"members":[\#(c.id)]}"#).outcome == "400 4007")

            // An invitation link lets a non-friend in, once.
            let link = try #require(try await s.smooth(.post, "/community-server/room/invitation", b, json: #"{"id":\#(groupId)}"#).result?["url"] as? String)
            #expect(link.contains("/invite/r/"))
            let joined = try await s.smooth(.patch, "/community-server/room/member", guest, json: #"{"code":"\#(link)"}"#)
            #expect(joined.outcome == "200 1000" && joined.result?["count"] as? Int == 4, "\(joined.body)")
            #expect(try await s.smooth(.patch, "/community-server/room/member", guest, json: #"{"code":"\#(link)"}"#).outcome == "400 4013")
            #expect(try await s.smooth(.patch, "/community-server/room/member", guest, json: #"{"code":"nope12345"}"#).outcome == "400 4005")

            // The guest follows the group; when the owner removes them, the subscription ends with `out`.
            let port = try #require(s.client.port)
            let watcher = try await StompTestClient.connected(port: port, token: guest.token, userId: String(guest.id))
            try await watcher.subscribe("/topic/direct/\(groupId)", id: "g")
            #expect(try await s.smooth(.delete, "/community-server/room/\(groupId)/member?id=\(guest.id)", c).outcome == "400 1401")
            #expect(try await s.smooth(.delete, "/community-server/room/\(groupId)/member?id=\(guest.id)", owner).outcome == "200 1000")
            _ = try await watcher.waitFor("the end of the subscription") { _ in watcher.messages.contains { $0["type"] as? String == "out" } }
            #expect(try await s.smooth(.get, "/community-server/room/\(groupId)", guest).outcome == "400 4018")

            // The owner leaves: the longest member (b) owns it; the last one out deletes it.
            #expect(try await s.smooth(.delete, "/community-server/room/\(groupId)/member?id=\(owner.id)", owner).outcome == "200 1000")
            let after = try #require(try await s.smooth(.get, "/community-server/room/\(groupId)", c).result?["members"] as? [[String: Any]])
            #expect(after.compactMap { $0["id"] as? Int } == [b.id, c.id] && after.compactMap { $0["owner"] as? Bool } == [true, false])
            #expect(try await s.smooth(.delete, "/community-server/room/\(groupId)/member?id=\(b.id)", b).outcome == "200 1000")
            #expect(try await s.smooth(.delete, "/community-server/room/\(groupId)/member?id=\(c.id)", c).outcome == "200 1000")
            #expect(try await s.smooth(.get, "/community-server/room/\(groupId)", c).outcome == "400 4018")
            var left = 0
            for try await _ in try await chat.query("SELECT 1 FROM dm_rooms WHERE alias = \(Int64(groupId))") { left += 1 }
            #expect(left == 0)
            await watcher.stop()
            try await replica.stop()
        }
    }

    @Test("/v1/rooms: a group of friends by user id, messages, edits through the shared routes, members removed; E-codes for refusals")
    func canonical() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let a = try await s.smoothUser(name: "하나")
            let b = try await s.smoothUser(name: "두울")
            let c = try await s.smoothUser(name: "세엣")
            try await s.befriend(a, b)
            try await s.befriend(a, c)
            let (ua, ub, uc) = (try await s.v1User(a), try await s.v1User(b), try await s.v1User(c))
            let created = try await s.send(.post, "/v1/rooms", ua, json: #"{"member_ids":["\#(ub.id)","\#(uc.id)"],"name":"셋이서"}"#)
            #expect(created.status == .ok, "\(String(buffer: created.body))")
            let room = try #require(try JSONSerialization.jsonObject(with: Data(buffer: created.body)) as? [String: Any])
            let roomId = try #require(room["room_id"] as? String)
            #expect(room["group"] as? Bool == true && room["name"] as? String == "셋이서" && room["owner_id"] as? String == ua.id)
            #expect((room["members"] as? [[String: Any]])?.compactMap { $0["user_id"] as? String } == [ua.id, ub.id, uc.id])

            let posted = try await s.send(.post, "/v1/rooms/\(roomId)/chats", ub, json: #"{"content":"반가워"}"#)
            #expect(posted.status == .ok, "\(String(buffer: posted.body))")
            let chat = try #require(try JSONSerialization.jsonObject(with: Data(buffer: posted.body)) as? [String: Any])
            let chatId = try #require(chat["dm_id"] as? String)
            #expect(try await s.send(.put, "/v1/rooms/\(roomId)/chats/\(chatId)", ub, json: #"{"content":"반가워요"}"#).status == .ok)
            #expect(errorCode(try await s.send(.put, "/v1/rooms/\(roomId)/chats/\(chatId)", uc, json: #"{"content":"남의 것"}"#)) == "E14")
            let history = try await s.get("/v1/rooms/\(roomId)/chats", uc)
            #expect((try JSONSerialization.jsonObject(with: Data(buffer: history.body)) as? [[String: Any]])?.first?["content"] as? String == "반가워요")

            // Refusals: not a friend (E13), a malformed id (E11), someone else removing a member (E14).
            let stranger = try await s.v1User(try await s.smoothUser(name: "남이"))
            #expect(errorCode(try await s.send(.post, "/v1/rooms", ua, json: #"{"member_ids":["\#(stranger.id)"]}"#)) == "E13")
            #expect(errorCode(try await s.send(.post, "/v1/rooms", ua, json: #"{"member_ids":["nope"]}"#)) == "E11")
            #expect(errorCode(try await s.get("/v1/rooms/\(roomId)/chats", stranger)) == "E13")
            #expect(errorCode(try await s.send(.delete, "/v1/rooms/\(roomId)/members/\(uc.id)", ub, json: "{}")) == "E14")
            #expect(try await s.send(.delete, "/v1/rooms/\(roomId)/members/\(uc.id)", ua, json: "{}").status == .ok)
            #expect(errorCode(try await s.get("/v1/rooms/\(roomId)", uc)) == "E13")
            let rooms = try await s.get("/v1/rooms", ub)
            #expect((try JSONSerialization.jsonObject(with: Data(buffer: rooms.body)) as? [[String: Any]])?.count == 1)
        }
    }

    @Test("the edge's prefixes reach every service's URLs (no service setting), and the home screen still answers when chat is down")
    func prefixesAndDegradedHome() async throws {
        let gateway = [
            "GATEWAY_SMOOTH_AUTH_PREFIX": "/a-server", "GATEWAY_SMOOTH_COMMUNITY_PREFIX": "/c-server", "GATEWAY_PUBLIC_URL": "https://chat.example",
            // No chat in this stack: its URL leads nowhere.
            "CHAT_URL": "http://127.0.0.1:1",
        ]
        try await Stack.run(services: [.auth, .workspace], gateway: gateway) { s in
            let email = "prefix\(UUID().uuidString.prefix(6))@example.com"
            #expect(try await s.smooth(.post, "/a-server/sign-up", json: #"{"email":"\#(email)","password":"password1","name":"접두"}"#).outcome == "200 1000")
            let signIn = try await s.smooth(.post, "/a-server/sign-in", json: #"{"email":"\#(email)","password":"password1","type":"ios","deviceToken":null}"#)
            let result = try #require(signIn.result)
            let user = Stack.SmoothUser(
                id: try #require(result["id"] as? Int), email: email, name: "접두", code: try #require(result["code"] as? String),
                token: try #require(result["accessToken"] as? String))
            #expect(
                try await s.smoothMultipart(.post, "/a-server/auth/profile", user, fields: [:], file: pngBytes, contentType: "image/png").outcome == "200 1000")
            let image = try #require(try await s.smooth(.get, "/a-server/auth/info", user).result?["profileImage"] as? String)
            #expect(image.hasPrefix("https://chat.example/a-server/static/profiles/"), "\(image)")
            let created = try await s.smoothMultipart(
                .post, "/c-server/community", user, fields: ["name": "접두사", "public": "true"], file: pngBytes, fileField: "icon", contentType: "image/png")
            #expect(created.outcome == "200 1000", "\(created.body)")
            let icon = try #require(created.result?["icon"] as? String)
            #expect(icon.hasPrefix("https://chat.example/c-server/icons/"), "\(icon)")
            let community = try #require(created.result?["id"] as? Int)
            try await eventually("workspace knows the member's profile") {
                let members = try await s.smooth(.get, "/c-server/community/\(community)/member", user).result?["members"] as? [[String: Any]]
                return (members?.first?["profileImage"] as? String)?.hasPrefix("https://chat.example/a-server/static/profiles/") == true
            }
            // Both links load without a token, under the configured prefixes.
            for url in [image, icon] {
                let path = String(url.dropFirst("https://chat.example".count))
                let answer = try await s.client.execute(uri: path, method: .get)
                #expect(answer.status == .ok && Array(buffer: answer.body) == pngBytes, "\(path)")
            }
            // Chat is down: the communities still come, with no rooms.
            let home = try await s.smooth(.get, "/c-server/community", user)
            #expect(home.outcome == "200 1000", "\(home.body)")
            #expect((home.result?["rooms"] as? [Any])?.isEmpty == true)
            #expect((home.result?["communities"] as? [[String: Any]])?.first?["id"] as? Int == community)
        }
    }
}
