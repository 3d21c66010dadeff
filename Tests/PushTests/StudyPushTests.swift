import Foundation
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import PushApp
import ServiceCatalog
import SuiteTesting
import Testing

/// The study app's notifications (client contract §3.2): its FCM token travels on `study.v1`
/// (sign-up, `update_fcm_token`, withdraw), and a request, an accept, a chat and a dodge each
/// reach the other user's current token once, through a fake FCM over a real socket.
@Suite("Study push notifications", .serialized)
struct StudyPushTests {
    static let project = "sesac-study-push"

    @Test(
        "request → the asked user; accept → the requester; chat → the recipient (new token after update_fcm_token); dodge → the partner; withdraw forgets the token"
    )
    func notifications() async throws {
        let fcm = try await FakeFCM()
        try await fcm.start()
        defer { Task { try? await fcm.stop() } }
        let keys = FakeKeySet()
        let key = try await FakeKeySet.key("study-push-k1")
        keys.serve([key])
        let push = StackService(
            .push, defaults: PushService.defaults, environment: ["PUSH_FCM_URL": fcm.baseURL, "PUSH_FCM_CREDENTIALS_FILE": try fcm.credentialsFile()]
        ) { try await PushApp.buildApplication(settings: $0, logger: $1) }
        try await keys.run { url in
            let study = StackService.study(env: ["STUDY_FIREBASE_PROJECT_ID": Self.project, "STUDY_FIREBASE_JWKS_URL": url])
            try await Stack.run(services: [study, push]) { s in
                let a = try await s.studyUser(key, project: Self.project, nick: "에이", fcm: "fcm-study-a")
                let b = try await s.studyUser(key, project: Self.project, nick: "비", fcm: "fcm-study-b")
                #expect(try await s.studyQueue(a) == 200)
                #expect(try await s.studyQueue(b) == 200)

                #expect(try await s.study(.post, "/v1/queue/studyrequest", token: a.token, form: "otheruid=\(b.uid)").status.code == 200)
                try await eventually("B is told of the request", timeout: .seconds(30)) { !fcm.sent(to: "fcm-study-b").isEmpty }
                let request = try #require(fcm.sent(to: "fcm-study-b").first)
                #expect(request.data == ["type": "studyrequest", "uid": a.uid] && request.title == "새싹 스터디" && request.body.contains("에이"))

                #expect(try await s.study(.post, "/v1/queue/studyaccept", token: b.token, form: "otheruid=\(a.uid)").status.code == 200)
                try await eventually("A is told of the match", timeout: .seconds(30)) { !fcm.sent(to: "fcm-study-a").isEmpty }
                #expect(fcm.sent(to: "fcm-study-a").first?.data == ["type": "studyaccept", "uid": b.uid])

                // A's new token takes over; B's chat goes there.
                #expect(try await s.study(.put, "/v1/user/update_fcm_token", token: a.token, form: "FCMtoken=fcm-study-a2").status.code == 200)
                let sent = try await s.study(.post, "/v1/chat/\(a.uid)", token: b.token, form: "chat=%EC%95%88%EB%85%95")
                #expect(sent.status.code == 200)
                try await eventually("A's new phone gets the chat", timeout: .seconds(30)) { !fcm.sent(to: "fcm-study-a2").isEmpty }
                let chat = try #require(fcm.sent(to: "fcm-study-a2").first)
                #expect(chat.title == "비" && chat.body == "안녕" && chat.data["type"] == "chat" && chat.data["uid"] == b.uid)

                #expect(try await s.study(.post, "/v1/queue/dodge", token: a.token, form: "otheruid=\(b.uid)").status.code == 200)
                try await eventually("B is told of the cancellation", timeout: .seconds(30)) { fcm.sent(to: "fcm-study-b").count >= 2 }
                #expect(fcm.sent(to: "fcm-study-b").last?.data == ["type": "dodge", "uid": a.uid])

                // Withdrawing forgets the token.
                #expect(try await s.study(.post, "/v1/user/withdraw", token: b.token).status.code == 200)
                let db = try #require(s.databases[ServiceEntry.push.name])
                try await eventually("push forgets B's token", timeout: .seconds(30)) {
                    var left = 0
                    for try await n in try await db.query("SELECT count(*) FROM study_tokens WHERE uid = \(b.uid)").decode(Int64.self) { left = Int(n) }
                    return left == 0
                }
                // Each event notified once, and only its recipient.
                try await Task.sleep(for: .milliseconds(500))
                #expect(fcm.sent(to: "fcm-study-b").count == 2 && fcm.sent(to: "fcm-study-a").count == 1 && fcm.sent(to: "fcm-study-a2").count == 1)
            }
        }
    }
}
