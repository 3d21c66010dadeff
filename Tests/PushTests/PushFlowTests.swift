import Common
import Foundation
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import PresenceApp
import PushApp
import ServiceCatalog
import SuiteTesting
import Testing
import TestSupport

/// Push on the whole path: device tokens from sign-up and `PUT /v1/users/deviceToken`
/// (`auth.user.v1`), membership (`workspace.v1`), presence (a native session, `presence.v1`),
/// messages over REST (`chat.message.v1`), read cursors (`chat.read.v1`), and a fake FCM (OAuth2
/// JWT bearer grant + HTTP v1 send) over a real socket.
@Suite("Push notifications", .serialized)
struct PushFlowTests {
    static func push(_ fcm: FakeFCM, _ apns: FakeAPNs) throws -> StackService {
        func file(_ text: String) throws -> String {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("push-\(UUID().uuidString)").path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        return StackService(
            .push, defaults: PushService.defaults,
            environment: [
                "PUSH_FCM_URL": fcm.baseURL, "PUSH_FCM_CREDENTIALS_FILE": try fcm.credentialsFile(),
                "PUSH_APNS_URL": apns.url, "PUSH_APNS_KEY_FILE": try file(apns.keyPEM), "PUSH_APNS_KEY_ID": apns.keyId, "PUSH_APNS_TEAM_ID": apns.teamId,
                "PUSH_APNS_TOPIC": apns.topic, "PUSH_APNS_CA_FILE": try file(apns.caPEM),
            ]
        ) { try await PushApp.buildApplication(settings: $0, logger: $1) }
    }

    static let presence = StackService(.presence, defaults: PresenceService.defaults) {
        try await PresenceApp.buildApplication(settings: $0, logger: $1)
    }

    /// One integer from push's database.
    static func count(_ db: PostgresClient, _ query: PostgresQuery) async throws -> Int {
        for try await n in try await db.query(query).decode(Int64.self) { return Int(n) }
        return 0
    }

    @Test(
        "offline readers get one notification per device over FCM or APNs (title, body, badge, ids); online, muted and unmentioned readers none; dead tokens are dropped; a 503 is retried once; read cursors reset the badge; DMs too; settings are validated"
    )
    func notifications() async throws {
        let fcm = try await FakeFCM(unregistered: ["fcm-f-dead"], flaky: ["fcm-g-flaky"])
        try await fcm.start()
        let (apnsLive, apnsDead) = (String(repeating: "ab", count: 32), String(repeating: "cd", count: 32))
        let apns = try await FakeAPNs(unregistered: [apnsDead])
        defer {
            Task {
                try? await fcm.stop()
                await apns.stop()
            }
        }
        try await Stack.run(services: [.auth, .workspace, .chat, Self.presence, try Self.push(fcm, apns)]) { s in
            let db = try #require(s.databases[ServiceEntry.push.name])
            let a = try await s.user("에이")
            let names = ["b", "c", "d", "eve", "f", "g", "h", "i", "k", "l"]
            var users: [String: User] = [:]
            for name in names { users[name] = try await s.user(name) }
            let (b, c, d, e, f, g, h, i) = (users["b"]!, users["c"]!, users["d"]!, users["eve"]!, users["f"]!, users["g"]!, users["h"]!, users["i"]!)
            let (k, l) = (users["k"]!, users["l"]!)  // k logs out, l leaves the workspace before the third message
            let outsider = try await s.user("밖")
            let tokens: [(User, String)] = [
                (b, "fcm-b1"), (b, "fcm-b2"), (c, "fcm-c"), (d, "fcm-d"), (e, "fcm-e"), (f, "fcm-f-dead"), (g, "fcm-g-flaky"),
                (h, apnsLive), (i, apnsDead),  // APNs device tokens (64 hex digits)
                (k, "fcm-k"), (l, "fcm-l"),
            ]
            for (user, token) in tokens {
                #expect(try await s.send(.put, "/v1/users/deviceToken", user, json: #"{"deviceToken":"\#(token)"}"#).status == .ok)
            }
            let wname = "알림-\(UUID().uuidString.prefix(4))"
            let wid = id(try await s.createWorkspace(a, name: wname), "workspace_id")
            for user in users.values { try await s.invite(user, to: wid, by: a) }
            let channelJSON = try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/channels", a))?.first)
            let (channel, channelName) = (id(channelJSON, "channel_id"), channelJSON["name"] as? String ?? "")
            let settings = "/v1/workspaces/\(wid)/channels/\(channel)/notifications"

            // Settings: validated, members only.
            try await eventually("push knows the channel's members", timeout: .seconds(30)) {
                try await Self.count(db, "SELECT count(*) FROM channel_members WHERE channel_id = \(UUID(uuidString: channel)!)") == 11
            }
            #expect(outcome(try await s.send(.put, settings, d, json: #"{"mode":"loud"}"#)) == "400 E11")
            #expect(outcome(try await s.send(.put, settings, d, json: #"{"mode":"#)) == "400 E11")
            // Over the settings body's 4 KiB (bytes: 1 400 Hangul syllables are 4 200 bytes).
            let padded = #"{"mode":"all","note":"\#(String(repeating: "가", count: 1_400))"}"#
            #expect(outcome(try await s.send(.put, settings, d, json: padded)) == "400 E11")  // decodeBody's answer for an oversized body
            #expect(outcome(try await s.send(.put, settings, outsider, json: #"{"mode":"none"}"#)) == "400 E13")
            #expect(outcome(try await s.get("/v1/workspaces/\(wid)/channels/not-a-channel/notifications", d)) == "400 E13")
            #expect(jsonObject(try await s.get(settings, d))?["mode"] as? String == "all")
            let muted = jsonObject(try await s.send(.put, settings, d, json: #"{"mode":"none"}"#))
            #expect(muted?["mode"] as? String == "none" && muted?["channel_id"] as? String == channel, "\(String(describing: muted))")
            #expect(jsonObject(try await s.send(.put, settings, e, json: #"{"mode":"mentions"}"#))?["mode"] as? String == "mentions")
            #expect(jsonObject(try await s.get(settings, d))?["mode"] as? String == "none")

            // c is online (a native session); push learns it from presence.v1.
            let (session, _) = try await NativeTestClient.connect(try #require(s.client.port), c)
            try await eventually("push sees c online and every token", timeout: .seconds(30)) {
                let online = try await Self.count(db, "SELECT count(*) FROM presence WHERE online AND user_id = \(UUID(uuidString: c.id)!)")
                let known = try await Self.count(db, "SELECT count(*) FROM device_tokens")
                return online == 1 && known == tokens.count
            }

            let post = "/v1/workspaces/\(wid)/channels/\(channel)/chats"
            let m1 = id(jsonObject(try await s.send(.post, post, a, json: #"{"content":"안녕하세요\n모두"}"#)), "chat_id")
            let m2 = id(jsonObject(try await s.send(.post, post, a, json: #"{"content":"@eve 봐주세요"}"#)), "chat_id")
            #expect(!m1.isEmpty && !m2.isEmpty)
            try await eventually("the notifications arrive", timeout: .seconds(30)) {
                fcm.sent(to: "fcm-b1").count == 2 && fcm.sent(to: "fcm-b2").count == 2 && fcm.sent(to: "fcm-g-flaky").count == 2
                    && fcm.sent(to: "fcm-e").count == 1 && apns.sent(to: apnsLive).count == 2 && fcm.sent(to: "fcm-k").count == 2
                    && fcm.sent(to: "fcm-l").count == 2
            }
            try await Task.sleep(for: .seconds(2))  // anything more would arrive meanwhile

            let b1 = fcm.sent(to: "fcm-b1").sorted { $0.badge < $1.badge }
            #expect(b1.map { $0.data["chat_id"] ?? "" } == [m1, m2])
            #expect(b1.map(\.badge) == [1, 2])
            #expect(b1.map(\.collapseKey) == [m1, m2])
            #expect(b1.first?.title == "\(wname) · #\(channelName)")
            #expect(b1.first?.body == "에이: 안녕하세요 모두")
            #expect(b1.first?.data == ["type": "channel", "workspace_id": wid, "channel_id": channel, "chat_id": m1])
            #expect(fcm.sent(to: "fcm-e").map { $0.data["chat_id"] ?? "" } == [m2], "mentions only")
            #expect(fcm.sent(to: "fcm-c").isEmpty, "online")
            #expect(fcm.sent(to: "fcm-d").isEmpty, "muted")
            #expect(fcm.sent(to: "fcm-f-dead").isEmpty)
            // APNs: the same notification, by the token's shape; the dead one answered 410 and is gone.
            let h1 = apns.sent(to: apnsLive).sorted { $0.badge < $1.badge }
            #expect(h1.map { $0.data["chat_id"] ?? "" } == [m1, m2] && h1.map(\.badge) == [1, 2] && h1.map(\.collapseId) == [m1, m2])
            #expect(h1.first?.title == "\(wname) · #\(channelName)" && h1.first?.body == "에이: 안녕하세요 모두")
            #expect(h1.first?.data == ["type": "channel", "workspace_id": wid, "channel_id": channel, "chat_id": m1])
            #expect(apns.sent(to: apnsDead).isEmpty && apns.refused.value.allSatisfy { $0 == "410 Unregistered" }, "\(apns.refused.value)")
            #expect(try await Self.count(db, "SELECT count(*) FROM device_tokens WHERE token = \(apnsDead)") == 0)
            #expect(fcm.accepted.value.allSatisfy { $0.token != apnsLive && $0.token != apnsDead })
            // Each (message, device) once.
            let pairs = fcm.accepted.value.map { "\($0.data["chat_id"] ?? "")/\($0.token)" }
            #expect(Set(pairs).count == pairs.count, "\(pairs)")
            #expect(fcm.refused.value.filter { $0 == "fcm-g-flaky" }.count == 1, "one 503, then accepted")
            // The dead token is gone, and nothing more goes to it.
            #expect(try await Self.count(db, "SELECT count(*) FROM device_tokens WHERE token = 'fcm-f-dead'") == 0)
            #expect(fcm.refused.value.filter { $0 == "fcm-f-dead" }.count <= 2)
            #expect(fcm.grants.value >= 1)

            // k logs out (auth's device-tokens-removed) and l leaves the workspace (member-left):
            // push forgets k's token and l's membership, and the next message reaches neither.
            #expect(try await s.request(.post, "/v1/users/logout", token: k.token).status == .ok)
            #expect(try await s.get("/v1/workspaces/\(wid)/exit", l).status == .ok)
            try await eventually("push saw the logout and the exit", timeout: .seconds(20)) {
                let token = try await Self.count(db, "SELECT count(*) FROM device_tokens WHERE token = 'fcm-k'")
                let member = try await Self.count(db, "SELECT count(*) FROM channel_members WHERE user_id = \(UUID(uuidString: l.id)!)")
                return token == 0 && member == 0
            }

            // b reads the channel: the badge starts again from the next message.
            #expect(try await s.send(.put, "/v1/workspaces/\(wid)/channels/\(channel)/read", b, json: "{}").status == .ok)
            try await eventually("push saw the read cursor", timeout: .seconds(20)) {
                try await Self.count(db, "SELECT count(*) FROM unread_counts WHERE user_id = \(UUID(uuidString: b.id)!)") == 0
            }
            let m3 = id(jsonObject(try await s.send(.post, post, a, json: #"{"content":"셋"}"#)), "chat_id")
            try await eventually("the third notification", timeout: .seconds(20)) { fcm.sent(to: "fcm-b1").count == 3 }
            #expect(fcm.sent(to: "fcm-b1").last.map { ($0.data["chat_id"] ?? "", $0.badge) } ?? ("", 0) == (m3, 1))
            #expect(fcm.sent(to: "fcm-k").count == 2 && fcm.sent(to: "fcm-l").count == 2, "no third message after logout or exit")

            // A DM to b: a notification with the room's ids.
            let room = id(jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms", a, json: #"{"opponent_id":"\#(b.id)"}"#)), "room_id")
            let dm = jsonObject(try await s.send(.post, "/v1/workspaces/\(wid)/dms/\(room)/chats", a, json: #"{"content":"비밀"}"#))
            try await eventually("the DM notification", timeout: .seconds(20)) { fcm.sent(to: "fcm-b2").count == 4 }
            let dmSent = try #require(fcm.sent(to: "fcm-b2").last)
            #expect(dmSent.title == "\(wname) · DM" && dmSent.body == "에이: 비밀")
            #expect(dmSent.data == ["type": "dm", "workspace_id": wid, "room_id": room, "dm_id": id(dm, "dm_id")])
            // DM settings: workspace members only.
            #expect(outcome(try await s.send(.put, "/v1/workspaces/\(wid)/dms/\(room)/notifications", outsider, json: #"{"mode":"none"}"#)) == "400 E13")
            #expect(try await s.send(.put, "/v1/workspaces/\(wid)/dms/\(room)/notifications", b, json: #"{"mode":"none"}"#).status == .ok)
            await session.kill()
        }
    }

    @Test("a personal room's message (no workspace) notifies its other members: the group's name as title, no workspace_id")
    func personalRoom() async throws {
        let fcm = try await FakeFCM()
        try await fcm.start()
        let apns = try await FakeAPNs()
        defer {
            Task {
                try? await fcm.stop()
                await apns.stop()
            }
        }
        try await Stack.run(services: [.auth, .workspace, .chat, try Self.push(fcm, apns)]) { s in
            let db = try #require(s.databases[ServiceEntry.push.name])
            let a = try await s.smoothUser(name: "보내는이", deviceToken: "fcm-room-a")
            let b = try await s.smoothUser(name: "받는이", deviceToken: "fcm-room-b")
            let c = try await s.smoothUser(name: "셋째", deviceToken: "fcm-room-c")
            try await s.befriend(a, b)
            try await s.befriend(a, c)
            let (ua, ub, uc) = (try await s.v1User(a), try await s.v1User(b), try await s.v1User(c))
            let room = try #require(
                jsonObject(try await s.send(.post, "/v1/rooms", ua, json: #"{"member_ids":["\#(ub.id)","\#(uc.id)"],"name":"우리 셋"}"#)))
            let roomId = try #require(room["room_id"] as? String)
            try await eventually("push knows the three tokens", timeout: .seconds(30)) {
                try await Self.count(db, "SELECT count(*) FROM device_tokens WHERE token LIKE 'fcm-room-%'") == 3
            }
            let sent = try #require(jsonObject(try await s.send(.post, "/v1/rooms/\(roomId)/chats", ua, json: #"{"content":"모두 안녕"}"#)))
            let dm = try #require(sent["dm_id"] as? String)
            try await eventually("both members are notified", timeout: .seconds(30)) {
                fcm.sent(to: "fcm-room-b").count == 1 && fcm.sent(to: "fcm-room-c").count == 1
            }
            let toB = try #require(fcm.sent(to: "fcm-room-b").first)
            #expect(toB.title == "우리 셋" && toB.body == "보내는이: 모두 안녕" && toB.badge == 1)
            #expect(toB.data == ["type": "dm", "room_id": roomId, "dm_id": dm])
            try await Task.sleep(for: .seconds(1))  // the sender's own device would have been notified by now
            #expect(fcm.sent(to: "fcm-room-a").isEmpty, "not the sender")
        }
    }
}
