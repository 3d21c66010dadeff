import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import SuiteTesting
import Testing

/// The study app end to end, as the app runs it (client contract §3): through the gateway, a real
/// chat-fanout, python-socketio clients of both Engine.IO generations, and a test App Store.
@Suite("Study app scenario", .serialized)
struct StudyScenarioTests {
    typealias T = StudyUserTests
    typealias Q = StudyQueueTests

    @Test("sign up → queue nearby → find each other → request → accept → matched → chat live and by history → rate → buy → wear")
    func wholeApp() async throws {
        let store = try FakeAppStore()
        try await T.withStudy(services: ["STUDY_APPSTORE_ROOT_CERTIFICATES_FILE": try store.rootFile()]) { s, key in
            let fanout = try await s.startFanoutReplica("fanout-study-scenario")
            // 1. Two people sign up (login answers 406 first, as for a new phone) and set their preferences.
            let mogUid = "mog-\(UUID().uuidString.prefix(8))"
            let mogToken = try await key.token(uid: mogUid, project: T.project)
            #expect(try await T.call(s, .get, "/v1/user", token: mogToken).status.code == 406)
            #expect(
                try await T.call(s, .post, "/v1/user", token: mogToken, form: Stack.studySignUpForm(nick: "모그", gender: "0", fcm: "fcm-mog")).status.code == 200
            )
            let mog = StudyPerson(uid: mogUid, token: mogToken, nick: "모그")
            let dhs = try await Q.person(s, key, nick: "디에이치")
            #expect(try await Q.code(s, .put, "/v1/user/mypage", mog, form: "searchable=1&ageMin=20&ageMax=40&gender=0&study=Swift") == 200)

            // 2. Both queue 200 m apart; each one's search finds the other.
            #expect(try await Q.code(s, .get, "/v1/queue/myQueueState", mog) == 201)
            #expect(try await Q.queue(s, mog, studies: ["Swift", "SwiftUI"]) == 200)
            #expect(try await Q.queue(s, dhs, dLat: 0.0018, studies: ["anything"]) == 200)
            #expect(try await Q.search(s, mog).near.map { $0["uid"] as? String } == [dhs.uid])
            #expect(try await Q.search(s, dhs).near.first?["studylist"] as? [String] == ["Swift", "SwiftUI"])

            // 3. MOG asks, DHS sees the request and asks back (201: accept now), then accepts.
            #expect(try await Q.code(s, .post, "/v1/queue/studyrequest", mog, form: "otheruid=\(dhs.uid)") == 200)
            #expect(try await Q.search(s, dhs).requested.map { $0["uid"] as? String } == [mog.uid])
            #expect(try await Q.code(s, .post, "/v1/queue/studyrequest", dhs, form: "otheruid=\(mog.uid)") == 201)
            #expect(try await Q.code(s, .post, "/v1/queue/studyaccept", dhs, form: "otheruid=\(mog.uid)") == 200)
            let state = try await Q.state(s, mog)
            #expect(state["matched"] as? Int == 1 && state["matchedUid"] as? String == dhs.uid && state["matchedNick"] as? String == "디에이치")

            // 4. Both open the chat socket: MOG's app on Engine.IO v4, DHS's on v3, WebSocket only.
            let port = try #require(s.client.port)
            let mogSocket = try PythonSocketClient.start(.eio4, port: port, namespaces: [], transports: "websocket", changesocketid: mog.uid)
            let dhsSocket = try PythonSocketClient.start(.eio3, port: port, namespaces: [], transports: "websocket", changesocketid: dhs.uid)
            try await mogSocket.waitFor("ready")
            try await dhsSocket.waitFor("ready")
            var sent: [[String: Any]] = []
            func send(_ from: StudyPerson, _ to: StudyPerson, _ text: String) async throws -> Bool {
                let response = try await StudyChatTests.send(s, from, to: to, text, json: from.uid == mog.uid)
                try #require(response.status.code == 200)
                sent.append(try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]))
                try await Task.sleep(for: .milliseconds(200))
                return true
            }
            try await eventually("DHS's socket hears MOG", timeout: .seconds(60)) {
                _ = try await send(mog, dhs, "안녕하세요")
                return !dhsSocket.events("chat").isEmpty
            }
            try await eventually("MOG's socket hears DHS", timeout: .seconds(60)) {
                _ = try await send(dhs, mog, "반가워요")
                return !mogSocket.events("chat").isEmpty
            }
            _ = try await send(mog, dhs, "내일 2시 어때요?")
            try await eventually("the question arrives live") { dhsSocket.events("chat").contains { $0["chat"] as? String == "내일 2시 어때요?" } }
            let live = try #require(dhsSocket.events("chat").last)
            #expect(live["from"] as? String == mog.uid && live["to"] as? String == dhs.uid && live["_id"] as? String == sent.last?["_id"] as? String)
            // History, as the app reloads it: everything since 2000, then only what is newer.
            let history = try await StudyChatTests.history(s, dhs, with: mog)
            #expect(history.map { $0["_id"] as? String } == sent.map { $0["_id"] as? String })
            let last = try #require(history.last?["createdAt"] as? String)
            #expect(try await StudyChatTests.history(s, dhs, with: mog, after: last).isEmpty)

            // 5. They rate each other; the reviews show on the next search.
            let rating = "otheruid=\(dhs.uid)&reputation=1&reputation=1&reputation=0&reputation=0&reputation=0&reputation=0&comment=%EC%B5%9C%EA%B3%A0"
            #expect(try await Q.code(s, .post, "/v1/queue/rate/\(dhs.uid)", mog, form: rating) == 200)
            #expect(try await Q.code(s, .post, "/v1/queue/rate/\(mog.uid)", dhs, form: "reputation=1&comment=") == 200)
            let rated = try await Q.json(s, .get, "/v1/user", dhs)
            #expect(rated["comment"] as? [String] == ["최고"] && (rated["reputation"] as? [Int])?.prefix(2) == [1, 1])

            // 6. MOG buys a face in the App Store and wears it.
            let purchase = try store.transaction(["productId": "com.memolease.sesac1.sprout3"])
            #expect(try await StudyShopTests.buy(s, mog, purchase, product: "com.memolease.sesac1.sprout3") == 200)
            #expect(try await Q.code(s, .post, "/v1/user/shop/item", mog, form: "sesac=3&background=0") == 200)
            let info = try await Q.json(s, .get, "/v1/user/shop/myinfo", mog)
            #expect(info["sesac"] as? Int == 3 && info["sesacCollection"] as? [Int] == [0, 3])

            // 7. Both leave the queue; the study is over for the state, the history stays.
            #expect(try await Q.code(s, .delete, "/v1/queue", mog) == 200)
            #expect(try await Q.code(s, .delete, "/v1/queue", dhs) == 200)
            #expect(try await Q.code(s, .get, "/v1/queue/myQueueState", mog) == 201)
            #expect(try await StudyChatTests.send(s, mog, to: dhs, "또 봐요").status.code == 201)
            #expect(try await StudyChatTests.history(s, mog, with: dhs).count == sent.count)
            try await mogSocket.stop()
            try await dhsSocket.stop()
            try await fanout.stop()
        }
    }
}
