import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import SuiteTesting
import Testing

/// The study app's accounts (client contract §3.1) through the gateway's study edge, against real
/// PostgreSQL and a Firebase key set served over HTTP: no `SesacKey`, no suite token, the
/// Firebase ID token in `idtoken`, answers as bare status codes.
@Suite("Study users through the gateway")
struct StudyUserTests {
    static let project = "sesac-study-test"

    /// The study service behind the gateway, trusting `key`'s tokens for `project`.
    static func withStudy(
        gateway: [String: String] = [:], services: [String: String] = [:], _ body: @escaping @Sendable (Stack, FakeKeySet.Key) async throws -> Void
    ) async throws {
        let keys = FakeKeySet()
        let key = try await FakeKeySet.key("study-k1")
        keys.serve([key])
        try await keys.run { url in
            // The gateway knows the project too: a Socket.IO handshake's `idtoken` proves its uid.
            let firebase = ["STUDY_FIREBASE_PROJECT_ID": project, "STUDY_FIREBASE_JWKS_URL": url]
            try await Stack.run(services: [.study(env: services.merging(firebase) { $1 })], gateway: gateway.merging(firebase) { $1 }) { s in
                try await body(s, key)
            }
        }
    }

    static func call(_ s: Stack, _ method: HTTPRequest.Method, _ path: String, token: String?, form: String? = nil, json: String? = nil)
        async throws -> TestResponse
    {
        try await s.study(method, path, token: token, form: form, json: json)
    }

    static func signUpForm(nick: String = "새싹", gender: String = "1", fcm: String = "fcm-token-1") -> String {
        Stack.studySignUpForm(nick: nick, gender: gender, fcm: fcm)
    }

    @Test("sign-up (406 → 200 → 201), login with every key of the User object, preferences, FCM token, shop/myinfo, withdraw (200 → 406)")
    func lifecycle() async throws {
        try await Self.withStudy { s, key in
            let uid = "uid-\(UUID().uuidString.prefix(8))"
            let token = try await key.token(uid: uid, project: Self.project)
            #expect(try await Self.call(s, .get, "/v1/user", token: token).status.code == 406)
            let created = try await Self.call(s, .post, "/v1/user", token: token, form: Self.signUpForm())
            #expect(created.status.code == 200, "\(String(buffer: created.body))")
            #expect(try await Self.call(s, .post, "/v1/user", token: token, form: Self.signUpForm()).status.code == 201)

            let login = try await Self.call(s, .get, "/v1/user", token: token)
            #expect(login.status.code == 200)
            let user = try #require(try JSONSerialization.jsonObject(with: Data(buffer: login.body)) as? [String: Any])
            #expect(
                Set(user.keys) == [
                    "_id", "__v", "uid", "phoneNumber", "email", "FCMtoken", "nick", "birth", "gender", "study", "comment", "reputation", "sesac",
                    "sesacCollection", "background", "backgroundCollection", "purchaseToken", "transactionId", "reviewedBefore", "reportedNum",
                    "reportedUser", "dodgepenalty", "dodgeNum", "ageMin", "ageMax", "searchable", "createdAt",
                ])
            #expect(user["uid"] as? String == uid && user["nick"] as? String == "새싹" && user["phoneNumber"] as? String == "+821012345678")
            #expect(user["email"] as? String == "sesac@example.com" && user["FCMtoken"] as? String == "fcm-token-1" && user["gender"] as? Int == 1)
            #expect(user["birth"] as? String == "1994-01-02T00:00:00.000Z" && user["__v"] as? Int == 0)
            #expect((user["_id"] as? String)?.count == 24 && (user["_id"] as? String)?.allSatisfy(\.isHexDigit) == true)
            #expect(user["reputation"] as? [Int] == [0, 0, 0, 0, 0, 0, 0, 0, 0] && user["comment"] as? [String] == [])
            #expect(user["sesac"] as? Int == 0 && user["sesacCollection"] as? [Int] == [0] && user["backgroundCollection"] as? [Int] == [0])
            #expect(user["ageMin"] as? Int == 18 && user["ageMax"] as? Int == 65 && user["searchable"] as? Int == 1 && user["study"] as? String == "")
            #expect((user["createdAt"] as? String)?.hasSuffix("Z") == true)

            // Preferences and the FCM token.
            let mypage = "searchable=0&ageMin=20&ageMax=30&gender=0&study=%EC%95%8C%EA%B3%A0%EB%A6%AC%EC%A6%98"
            #expect(try await Self.call(s, .put, "/v1/user/mypage", token: token, form: mypage).status.code == 200)
            #expect(try await Self.call(s, .put, "/v1/user/update_fcm_token", token: token, form: "FCMtoken=fcm-token-2").status.code == 200)
            let info = try await Self.call(s, .get, "/v1/user/shop/myinfo", token: token)
            #expect(info.status.code == 200)
            let after = try #require(try JSONSerialization.jsonObject(with: Data(buffer: info.body)) as? [String: Any])
            #expect(after["searchable"] as? Int == 0 && after["ageMin"] as? Int == 20 && after["ageMax"] as? Int == 30 && after["gender"] as? Int == 0)
            #expect(after["study"] as? String == "알고리즘" && after["FCMtoken"] as? String == "fcm-token-2")

            // Withdraw; the uid may register again.
            #expect(try await Self.call(s, .post, "/v1/user/withdraw", token: token).status.code == 200)
            #expect(try await Self.call(s, .post, "/v1/user/withdraw", token: token).status.code == 406)
            #expect(try await Self.call(s, .get, "/v1/user", token: token).status.code == 406)
            #expect(try await Self.call(s, .put, "/v1/user/mypage", token: token, form: mypage).status.code == 406)
            #expect(try await Self.call(s, .put, "/v1/user/update_fcm_token", token: token, form: "FCMtoken=x").status.code == 406)
            #expect(try await Self.call(s, .post, "/v1/user", token: token, form: Self.signUpForm()).status.code == 200)
        }
    }

    @Test("a birth with milliseconds comes back exactly as sent")
    func birthMilliseconds() async throws {
        try await Self.withStudy { s, key in
            // After 2000 the driver's truncation makes a date earlier; before it, later.
            for (year, millis) in [("1994", "123"), ("1994", "999")]
                + ["001", "123", "345", "499", "500", "678", "777", "901", "998", "999"].map({ ("2004", $0) })
            {
                let token = try await key.token(uid: "uid-\(UUID().uuidString.prefix(8))", project: Self.project)
                let birth = "\(year)-01-02T03:04:05.\(millis)Z"
                let form = Self.signUpForm().replacingOccurrences(
                    of: "1994-01-02T00%3A00%3A00.000Z", with: birth.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
                #expect(try await Self.call(s, .post, "/v1/user", token: token, form: form).status.code == 200)
                let login = try await Self.call(s, .get, "/v1/user", token: token)
                let user = try #require(try JSONSerialization.jsonObject(with: Data(buffer: login.body)) as? [String: Any])
                #expect(user["birth"] as? String == birth)
            }
        }
    }

    @Test("too fast: past the per-address burst the study edge answers a bare 429, and answers again once the rate allows")
    func tooFast() async throws {
        try await Self.withStudy(gateway: ["GATEWAY_ADDRESS_BURST": "4", "GATEWAY_ADDRESS_RATE_PER_SECOND": "2"]) { s, key in
            let token = try await key.token(uid: "uid-\(UUID().uuidString.prefix(8))", project: Self.project)
            var answers: [Int] = []
            var refused: TestResponse?
            for _ in 0..<12 {
                let response = try await Self.call(s, .get, "/v1/user", token: token)
                answers.append(Int(response.status.code))
                if response.status.code == 429 { refused = response }
            }
            #expect(answers.prefix(4).allSatisfy { $0 == 406 }, "\(answers)")
            #expect(answers.contains(429), "\(answers)")
            #expect(refused?.body.readableBytes == 0, "a bare status, as the app expects")
            try await Task.sleep(for: .milliseconds(1_500))
            #expect(try await Self.call(s, .get, "/v1/user", token: token).status.code == 406)
        }
    }

    @Test("refusals: 401 for any token trouble, 501 for missing or malformed fields, 202 for nicknames, 413, 404; JSON bodies too")
    func refusals() async throws {
        try await Self.withStudy { s, key in
            let uid = "uid-\(UUID().uuidString.prefix(8))"
            let token = try await key.token(uid: uid, project: Self.project)
            // Tokens: none, garbage, expired, another project's, an unknown key's.
            let expired = try await key.token(uid: uid, project: Self.project, issuedAt: Date().addingTimeInterval(-7200), ttl: 3600)
            let foreign = try await key.token(uid: uid, project: "another-project")
            let stranger = try await FakeKeySet.key("unknown-kid").token(uid: uid, project: Self.project)
            for bad in [nil, "", "garbage", expired, foreign, stranger] {
                #expect(try await Self.call(s, .get, "/v1/user", token: bad).status.code == 401, "\(bad ?? "none")")
                #expect(try await Self.call(s, .post, "/v1/user", token: bad, form: Self.signUpForm()).status.code == 401)
            }
            // Fields: each one missing, then malformed values.
            let full = Self.signUpForm()
            for field in ["phoneNumber", "FCMtoken", "nick", "birth", "email", "gender"] {
                let without = full.split(separator: "&").filter { !$0.hasPrefix(field + "=") }.joined(separator: "&")
                #expect(try await Self.call(s, .post, "/v1/user", token: token, form: without).status.code == 501, "without \(field)")
            }
            for (name, form) in [
                ("gender 2", Self.signUpForm(gender: "2")), ("gender x", Self.signUpForm(gender: "x")),
                ("future birth", full.replacingOccurrences(of: "1994-01-02", with: "2994-01-02")),
                ("bad birth", full.replacingOccurrences(of: "1994-01-02T00%3A00%3A00.000Z", with: "yesterday")),
                ("bad phone", full.replacingOccurrences(of: "%2B821012345678", with: "call-me")),
                ("bad email", full.replacingOccurrences(of: "sesac%40example.com", with: "nobody")),
                ("bad encoding", full + "&x=%ZZ"),
            ] {
                #expect(try await Self.call(s, .post, "/v1/user", token: token, form: form).status.code == 501, "\(name)")
            }
            // Characters and bytes: 11 characters, a control character, and one letter carrying
            // 50 combining accents (2 characters, 101 bytes).
            for nick in ["", "   ", "열한글자를넘는닉네임입니다", "a\u{0007}b", "a" + String(repeating: "\u{0301}", count: 50) + "b"] {
                #expect(try await Self.call(s, .post, "/v1/user", token: token, form: Self.signUpForm(nick: nick)).status.code == 202, "nick \(nick)")
            }
            // Too much: a body over the service's 64 KiB.
            let huge = full + "&padding=" + String(repeating: "a", count: 100_000)
            #expect(try await Self.call(s, .post, "/v1/user", token: token, form: huge).status.code == 413)
            // Paths no study route has.
            #expect(try await Self.call(s, .get, "/v1/user/nothing", token: token).status.code == 404)
            #expect(try await Self.call(s, .delete, "/v1/user", token: token).status.code == 404)

            // JSON bodies are accepted as well, and the user is registered once whatever the race.
            let json =
                #"{"phoneNumber":"+821099998888","FCMtoken":"fcm-json","nick":"제이슨","birth":"1990-05-05T00:00:00.000Z","email":"j@example.com","gender":0}"#
            let racing = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<6 { group.addTask { try await Self.call(s, .post, "/v1/user", token: token, json: json).status.code } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(racing.sorted() == [200, 201, 201, 201, 201, 201], "\(racing)")
            let login = try await Self.call(s, .get, "/v1/user", token: token)
            let user = try #require(try JSONSerialization.jsonObject(with: Data(buffer: login.body)) as? [String: Any])
            #expect(user["nick"] as? String == "제이슨" && user["gender"] as? Int == 0)
            // Preferences out of range or missing.
            for form in ["searchable=1&ageMin=30&ageMax=20&gender=0&study=", "searchable=2&ageMin=20&ageMax=30&gender=0&study=", "searchable=1"] {
                #expect(try await Self.call(s, .put, "/v1/user/mypage", token: token, form: form).status.code == 501, "\(form)")
            }
            #expect(try await Self.call(s, .put, "/v1/user/update_fcm_token", token: token, form: "").status.code == 501)
        }
    }
}
