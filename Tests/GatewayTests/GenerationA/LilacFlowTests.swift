import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing
import TestSupport

/// Issue 20 §2: Lilac, the Gen A client of the SeSAC workspace server (client contract §1.9),
/// unchanged: form-urlencoded bodies, integer ids, channels by name, its own shapes. Its app key
/// is configured as Gen A (`SESAC_GENERATION_A_KEYS`); WSX and AMOR keep Gen B on the same paths.
@Suite("Gen A (Lilac) next to Gen B")
struct LilacFlowTests {
    static let lilacKey = Stack.generationAKey
    static let gateway = ["SESAC_GENERATION_A_KEYS": lilacKey]

    /// As Lilac sends it: `SesacKey`, the raw token, a form body (or none).
    func lilac(_ s: Stack, _ method: HTTPRequest.Method, _ uri: String, _ token: String? = nil, form: String? = nil) async throws -> TestResponse {
        try await s.client.execute(
            uri: uri, method: method,
            headers: s.headers(token: token, appKey: Self.lilacKey, contentType: form == nil ? nil : "application/x-www-form-urlencoded"),
            body: form.map { ByteBuffer(string: $0) })
    }

    func lilacMultipart(_ s: Stack, _ method: HTTPRequest.Method, _ uri: String, _ token: String, fields: [String: String], image: [UInt8]? = nil)
        async throws -> TestResponse
    {
        let body = multipart(file: image, contentType: "image/jpeg", fields: fields)
        return try await s.client.execute(
            uri: uri, method: method, headers: s.headers(token: token, appKey: Self.lilacKey, contentType: body.contentType), body: body.body)
    }

    func path(_ name: String) -> String { name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? name }

    func query(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? value
    }

    /// Signs up (form, as Lilac) and logs in by email; returns the flat login answer's fields.
    func signUp(_ s: Stack, _ nickname: String) async throws -> (id: Int, token: String, refresh: String, email: String) {
        let email = "lilac\(UUID().uuidString.prefix(8).lowercased())@example.com"
        let joined = try await lilac(
            s, .post, "/v1/users/join", form: "email=\(query(email))&password=Lilac%211234&nickname=\(query(nickname))&phone=&deviceToken=")
        #expect(joined.status == .ok, "join: \(String(buffer: joined.body))")
        let profile = try #require(jsonObject(joined))
        let id = try #require(profile["user_id"] as? Int)
        #expect(profile["email"] as? String == email && profile["vendor"] as? String == "email")
        let nested = try #require(profile["token"] as? [String: Any])
        #expect(nested["accessToken"] is String && nested["refreshToken"] is String)
        try expectContractDates(joined)

        let login = try await lilac(s, .post, "/v1/users/login", form: "email=\(query(email))&password=Lilac%211234&deviceToken=")
        let flat = try #require(jsonObject(login), "login: \(String(buffer: login.body))")
        #expect(Set(flat.keys) == ["user_id", "nickname", "accessToken", "refreshToken"])
        #expect(flat["user_id"] as? Int == id && flat["nickname"] as? String == nickname)
        return (id, try #require(flat["accessToken"] as? String), try #require(flat["refreshToken"] as? String), email)
    }

    @Test("join → login → my → workspace → channel by name → chat → unreads → pay validation, all on Gen A")
    func lilacFlow() async throws {
        try await FakePortOne.run { fake, portOne in
            try await Stack.run(
                services: [.auth, .workspace, .chat, .payment(env: FakePortOne.environment(url: portOne))], gateway: Self.gateway
            ) { s in
                let owner = try await signUp(s, "라일락")
                let friend = try await signUp(s, "친구")

                // My profile: integer id, vendor, coins; Lilac edits it with POST and empty strings.
                let my = try #require(jsonObject(try await lilac(s, .get, "/v1/users/my", owner.token)))
                #expect(my["user_id"] as? Int == owner.id && my["sesacCoin"] as? Int == 0 && my["vendor"] as? String == "email")
                let edited = try await lilac(s, .post, "/v1/users/my", owner.token, form: "nickname=\(query("라일락2"))&phone=")
                #expect(jsonObject(edited)?["nickname"] as? String == "라일락2", "\(String(buffer: edited.body))")
                let other = try #require(jsonObject(try await lilac(s, .get, "/v1/users/\(friend.id)", owner.token)))
                #expect(other["user_id"] as? Int == friend.id && other["phone"] == nil && other["nickname"] as? String == "친구")

                // A workspace (multipart, always with an image), its detail with channels and members.
                let created = try await lilacMultipart(
                    s, .post, "/v1/workspaces", owner.token, fields: ["name": "라일락 팀", "description": ""], image: jpegBytes)
                let workspace = try #require(jsonObject(created), "create: \(String(buffer: created.body))")
                let wid = try #require(workspace["workspace_id"] as? Int)
                #expect(workspace["owner_id"] as? Int == owner.id && (workspace["thumbnail"] as? String)?.hasPrefix("/static/") == true)
                try expectContractDates(created)
                let list = try #require(jsonArray(try await lilac(s, .get, "/v1/workspaces", owner.token)))
                #expect(list.map { $0["workspace_id"] as? Int } == [wid])
                let invited = try await lilac(s, .post, "/v1/workspaces/\(wid)/members", owner.token, form: "email=\(query(friend.email))")
                #expect(jsonObject(invited)?["user_id"] as? Int == friend.id, "\(String(buffer: invited.body))")
                // Lilac's own invite sends no email: a clear E11.
                #expect(outcome(try await lilac(s, .post, "/v1/workspaces/\(wid)/members", owner.token)) == "400 E11")
                let detail = try #require(jsonObject(try await lilac(s, .get, "/v1/workspaces/\(wid)", owner.token)))
                let general = try #require((detail["channels"] as? [[String: Any]])?.first)
                #expect(general["name"] as? String == "일반" && general["private"] as? Int == 0 && general["workspace_id"] as? Int == wid)
                #expect(general["channel_id"] is Int)
                #expect(Set((detail["workspaceMembers"] as? [[String: Any]] ?? []).compactMap { $0["user_id"] as? Int }) == [owner.id, friend.id])

                // A channel by form, then addressed by its name.
                let study = try await lilac(s, .post, "/v1/workspaces/\(wid)/channels", owner.token, form: "name=\(query("스터디 방"))&description=")
                let channel = try #require(jsonObject(study), "channel: \(String(buffer: study.body))")
                let cid = try #require(channel["channel_id"] as? Int)
                let byName = "/v1/workspaces/\(wid)/channels/\(path("스터디 방"))"
                let one = try #require(jsonObject(try await lilac(s, .get, byName, owner.token)))
                #expect(one["channel_id"] as? Int == cid && (one["channelMembers"] as? [[String: Any]])?.compactMap { $0["user_id"] as? Int } == [owner.id])
                let mine = try #require(jsonArray(try await lilac(s, .get, "/v1/workspaces/\(wid)/channels/my", owner.token)))
                #expect(Set(mine.compactMap { $0["name"] as? String }) == ["일반", "스터디 방"])

                // Chats by name: Lilac posts multipart `content`; the friend opens the channel
                // (joining it by reading) and answers.
                let chats = byName + "/chats"
                // Chat learns the channel and the invitation from workspace.v1 (as for Gen B).
                try await s.waitForChatMember(try await userUUID(s, owner.id), channelAlias: cid)
                try await s.waitForWorkspaceMemberInChat(try await userUUID(s, friend.id), workspace: try await workspaceUUID(s, wid))
                let first = try await lilacMultipart(s, .post, chats, owner.token, fields: ["content": "첫 글"])
                let firstChat = try #require(jsonObject(first), "post: \(String(buffer: first.body))")
                #expect(firstChat["channel_id"] as? Int == cid && firstChat["channelName"] as? String == "스터디 방")
                #expect(firstChat["chat_id"] is Int && firstChat["files"] as? [String] == [])
                #expect((firstChat["user"] as? [String: Any])?["user_id"] as? Int == owner.id)
                try expectContractDates(first)
                let history = try #require(jsonArray(try await lilac(s, .get, chats + "?cursor_date=", friend.token)))
                #expect(history.map { $0["content"] as? String } == ["첫 글"])
                let reply = try await lilacMultipart(s, .post, chats, friend.token, fields: ["content": "반가워"])
                #expect(reply.status == .ok, "\(String(buffer: reply.body))")
                // Lilac's cursor is its stored date in the device's zone: +09:00, exclusive.
                let firstDate = try #require(firstChat["createdAt"] as? String)
                let seoul = try #require(Self.seoulTime(firstDate))
                let after = try #require(jsonArray(try await lilac(s, .get, chats + "?cursor_date=\(query(seoul))", owner.token)))
                #expect(after.map { $0["content"] as? String } == ["반가워"])
                #expect(Set(try #require(jsonArray(try await lilac(s, .get, chats, owner.token))).compactMap { $0["chat_id"] as? Int }).count == 2)
                let unreads = try #require(jsonObject(try await lilac(s, .get, byName + "/unreads?after=\(query(seoul))", owner.token)))
                #expect(unreads["channel_id"] as? Int == cid && unreads["name"] as? String == "스터디 방" && unreads["count"] as? Int == 1)
                #expect(jsonObject(try await lilac(s, .get, byName + "/unreads?after=", owner.token))?["count"] as? Int == 0)

                // Pay validation (form) answers Gen A's BillingResult; the coins reach /users/my.
                let merchant = "ios_\(Self.lilacKey)_\(Int(Date().timeIntervalSince1970))"
                fake.paid("imp_lilac_1", merchantUID: merchant, name: "100 Coin", amount: 1000)
                let paid = try await lilac(s, .post, "/v1/store/pay/validation", owner.token, form: "imp_uid=imp_lilac_1&merchant_uid=\(merchant)")
                let billing = try #require(jsonObject(paid), "pay: \(String(buffer: paid.body))")
                #expect(Set(billing.keys) == ["billing_id", "merchant_uid", "amount", "sesacCoin", "success", "createdAt"])
                #expect(billing["billing_id"] is Int && billing["amount"] as? Int == 1000 && billing["sesacCoin"] as? Int == 100)
                #expect(billing["success"] as? Bool == true && billing["merchant_uid"] as? String == merchant)
                try expectContractDates(paid)
                #expect(
                    outcome(try await lilac(s, .post, "/v1/store/pay/validation", owner.token, form: "imp_uid=imp_lilac_1&merchant_uid=\(merchant)"))
                        == "400 E81")
                try await eventually("the coins on /users/my", timeout: .seconds(20)) {
                    jsonObject(try await lilac(s, .get, "/v1/users/my", owner.token))?["sesacCoin"] as? Int == 100
                }

                // Members, handing over and leaving, by integer ids and names.
                let member = try #require(jsonObject(try await lilac(s, .get, "/v1/workspaces/\(wid)/members/\(friend.id)", owner.token)))
                #expect(member["user_id"] as? Int == friend.id && member["email"] as? String == friend.email)
                let members = try #require(jsonArray(try await lilac(s, .get, byName + "/members", owner.token)))
                #expect(Set(members.compactMap { $0["user_id"] as? Int }) == [owner.id, friend.id])
                let handed = try await lilac(s, .put, byName + "/change/admin/\(friend.id)", owner.token)
                #expect(jsonObject(handed)?["owner_id"] as? Int == friend.id, "\(String(buffer: handed.body))")
                let left = try #require(jsonArray(try await lilac(s, .get, byName + "/leave", owner.token)))
                #expect(left.compactMap { $0["name"] as? String } == ["일반"])
                let admin = try await lilac(s, .put, "/v1/workspaces/\(wid)/change/admin/\(friend.id)", owner.token)
                #expect(jsonObject(admin)?["owner_id"] as? Int == friend.id, "\(String(buffer: admin.body))")
                // A channel's owner cannot leave the workspace (E15): hand the default channel over first.
                #expect(outcome(try await lilac(s, .get, "/v1/workspaces/\(wid)/leave", owner.token)) == "400 E15")
                let generalByName = "/v1/workspaces/\(wid)/channels/\(path("일반"))"
                #expect(jsonObject(try await lilac(s, .put, generalByName + "/change/admin/\(friend.id)", owner.token))?["owner_id"] as? Int == friend.id)
                let remaining = try #require(jsonArray(try await lilac(s, .get, "/v1/workspaces/\(wid)/leave", owner.token)))
                #expect(remaining.isEmpty)
                #expect(outcome(try await lilac(s, .get, "/v1/workspaces/\(wid)", owner.token)) == "400 E13")
                #expect(try await lilac(s, .get, "/v1/users/logout", owner.token).status == .ok)
            }
        }
    }

    @Test("the same paths stay Gen B for other keys; Gen A-only paths, /v2 login and refresh by refresh token alone")
    func generationsSideBySide() async throws {
        try await Stack.run(services: [.auth, .workspace], gateway: Self.gateway) { s in
            let lilacUser = try await signUp(s, "라일락")
            // Gen B's key on a shared path: UUIDs and Gen B's nested login.
            let wsx = try await s.user("새싹")
            let created = try await s.createWorkspace(wsx)
            #expect(UUID(uuidString: created["workspace_id"] as? String ?? "") != nil && created["coverImage"] is String)
            let login = try await s.send(.post, "/v2/users/login", nil, json: #"{"email":"\#(wsx.email)","password":"correct horse 1"}"#)
            #expect((jsonObject(login)?["token"] as? [String: Any])?["accessToken"] is String, "\(String(buffer: login.body))")
            // A path only Gen A has answers Gen A's shape whatever the key.
            let my = try #require(jsonObject(try await s.get("/v1/users/my", wsx)))
            #expect(my["user_id"] is Int && my["vendor"] as? String == "email")
            // Refresh with the refresh token alone (Lilac's newest interceptor sends no Authorization).
            let refreshed = try await s.client.execute(
                uri: "/v1/auth/refresh", method: .get,
                headers: {
                    var h = s.headers(token: nil, appKey: Self.lilacKey, contentType: nil)
                    h[HTTPField.Name("RefreshToken")!] = lilacUser.refresh
                    return h
                }())
            #expect(jsonObject(refreshed)?["accessToken"] is String, "\(String(buffer: refreshed.body))")
            var forged = s.headers(token: nil, appKey: Self.lilacKey, contentType: nil)
            forged[HTTPField.Name("RefreshToken")!] = "not-a-refresh-token"
            #expect(outcome(try await s.client.execute(uri: "/v1/auth/refresh", method: .get, headers: forged)) == "400 E06")
        }
    }

    @Test("hostile Gen A paths: unknown or malformed aliases and names, strangers, long names, bad cursors — clear errors, never a 500")
    func hostile() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat], gateway: Self.gateway) { s in
            let owner = try await signUp(s, "주인")
            let stranger = try await signUp(s, "외부인")
            let created = try await lilacMultipart(s, .post, "/v1/workspaces", owner.token, fields: ["name": "비밀 팀", "description": "x"], image: jpegBytes)
            let wid = try #require(jsonObject(created)?["workspace_id"] as? Int)
            let general = "/v1/workspaces/\(wid)/channels/\(path("일반"))"
            for (uri, who) in [
                (general + "/chats", stranger.token), (general, stranger.token), (general + "/unreads?after=", stranger.token),
                ("/v1/workspaces/\(wid)", stranger.token), ("/v1/workspaces/999999/channels/x/chats", owner.token),
                ("/v1/workspaces/abc", owner.token), ("/v1/workspaces/-1/channels", owner.token),
                ("/v1/workspaces/\(wid)/channels/\(path("없는 채널"))/chats", owner.token),
                ("/v1/workspaces/\(wid)/channels/\(String(repeating: "a", count: 5000))/chats", owner.token),
                ("/v1/workspaces/\(wid)/members/0", owner.token), ("/v1/workspaces/99999999999999999999", owner.token),
            ] {
                let response = try await lilac(s, .get, uri, who)
                #expect(outcome(response) == "400 E13", "\(uri): \(String(buffer: response.body))")
            }
            #expect(outcome(try await lilac(s, .get, "/v1/users/123456789", owner.token)) == "400 E03")
            // Chat learns the owner's membership of 일반 from workspace.v1 (eventually): then the
            // bad cursor is the request's only fault.
            let generalId = try #require(jsonObject(try await lilac(s, .get, general, owner.token))?["channel_id"] as? Int)
            try await s.waitForChatMember(try await userUUID(s, owner.id), channelAlias: generalId)
            #expect(outcome(try await lilac(s, .get, general + "/chats?cursor_date=yesterday", owner.token)) == "400 E11")
            #expect(outcome(try await lilac(s, .put, "/v1/workspaces/\(wid)/change/admin/\(stranger.id)", stranger.token)) == "400 E13")
            #expect(outcome(try await lilac(s, .post, "/v1/workspaces/\(wid)/channels", stranger.token, form: "name=x")) == "400 E13")
            #expect(outcome(try await lilac(s, .post, "/v1/workspaces/\(wid)/channels", owner.token, form: "name=&description=")) == "400 E11")
            #expect(outcome(try await lilac(s, .post, "/v1/users/my", owner.token, form: "nickname=\(String(repeating: "가", count: 31))")) == "400 E11")
            // The suite still answers.
            #expect(try await lilac(s, .get, "/v1/workspaces/\(wid)", owner.token).status == .ok)
        }
    }

    func userUUID(_ s: Stack, _ alias: Int) async throws -> String {
        let auth = try #require(s.databases["auth"])
        for try await id in try await auth.query("SELECT id FROM users WHERE alias = \(Int64(alias))").decode(UUID.self) {
            return id.uuidString.lowercased()
        }
        Issue.record("no user with alias \(alias)")
        throw CancellationError()
    }

    func workspaceUUID(_ s: Stack, _ alias: Int) async throws -> String {
        let db = try #require(s.workspaceDatabase)
        for try await id in try await db.query("SELECT id FROM workspaces WHERE alias = \(Int64(alias))").decode(UUID.self) {
            return id.uuidString.lowercased()
        }
        Issue.record("no workspace with alias \(alias)")
        throw CancellationError()
    }

    /// The same instant written as Lilac's device in Seoul writes it (`+09:00`).
    static func seoulTime(_ utc: String) -> String? {
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = parser.date(from: utc) else { return nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "Asia/Seoul")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss.SSSZZZZZ"
        return formatter.string(from: date)
    }
}
