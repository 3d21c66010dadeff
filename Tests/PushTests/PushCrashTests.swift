import Common
import Database
import HTTPTypes
import HummingbirdTesting
import Kafka
import Foundation
import PostgresNIO
import ServiceCatalog
import SuiteTesting
import Testing
import TestSupport

/// The push executable killed with SIGKILL while notifications are in flight, then started
/// again on the same database: nothing is lost, nothing is planned twice, and the only
/// notifications sent twice are the ones the provider had accepted but the killed process had not
/// recorded yet — at most one per send in flight (`push.concurrency`), re-sent after the lease
/// with the same collapse id — and, on a busy machine, the sends the provider answered after the
/// request timeout (retried, and logged as such).
@Suite("Push across a crash", .serialized)
struct PushCrashTests {
    @Test(
        "300 notifications at a slow provider, push killed (SIGKILL) after 60 and restarted: all 300 sent, duplicates only from the sends in flight or timed out"
    )
    func killedMidStream() async throws {
        let fcm = try await FakeFCM(delay: .milliseconds(40))
        try await fcm.start()
        let database = try await TestDatabase.create(prefix: "push")
        defer {
            Task {
                try? await fcm.stop()
                try? await database.drop()
            }
        }
        let concurrency = 8
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let port = freePortRange(count: 1)
            let environment = [
                "HTTP_PORT": "\(port)", "KAFKA_BROKERS": s.cluster.bootstrapServers, "DATABASE_URL": database.configuration.url, "LOG_LEVEL": "info",
                "KAFKA_FETCH_WAIT_MS": "5", "PUSH_FCM_URL": fcm.baseURL, "PUSH_FCM_CREDENTIALS_FILE": try fcm.credentialsFile(),
                "PUSH_CONCURRENCY": "\(concurrency)", "PUSH_LEASE_SECONDS": "2", "PUSH_REQUEST_TIMEOUT_MS": "1500",
            ]
            var push = try TestProcess(executable: "push", environment: environment)
            defer {
                push.signal(SIGKILL)
                _ = push.reap()
            }
            let a = try await s.user("보내는이")
            var readers: [User] = []
            for n in 0..<10 {
                let user = try await s.user("r\(n)")
                #expect(try await s.send(.put, "/v1/users/deviceToken", user, json: #"{"deviceToken":"fcm-crash-\#(n)"}"#).status == .ok)
                readers.append(user)
            }
            let wid = id(try await s.createWorkspace(a), "workspace_id")
            for user in readers { try await s.invite(user, to: wid, by: a) }
            let channel = id(try #require(jsonArray(try await s.get("/v1/workspaces/\(wid)/channels", a))?.first), "channel_id")
            try await database.withClient { db in
                try await eventually("push knows the members and tokens", timeout: .seconds(60)) {
                    var total: Int64 = 0
                    for try await n in try await db.query("SELECT (SELECT count(*) FROM channel_members) + (SELECT count(*) FROM device_tokens)").decode(
                        Int64.self)
                    { total = n }
                    return total == 21
                }
            }
            var messages: [String] = []
            for n in 0..<30 {
                let answer = try await s.send(.post, "/v1/workspaces/\(wid)/channels/\(channel)/chats", a, json: #"{"content":"m\#(n)"}"#)
                messages.append(id(jsonObject(answer), "chat_id"))
            }
            try await eventually("60 notifications accepted", timeout: .seconds(60)) { fcm.accepted.value.count >= 60 }
            push.signal(SIGKILL)
            _ = push.reap()
            let first = push
            let atKill = fcm.accepted.value.count
            push = try TestProcess(executable: "push", environment: environment)

            let expected = Set(messages.flatMap { m in (0..<10).map { "\(m)/fcm-crash-\($0)" } })
            func pairs() -> [String] { fcm.accepted.value.map { "\($0.data["chat_id"] ?? "")/\($0.token)" } }
            try await eventually("every notification accepted", timeout: .seconds(120)) { Set(pairs()) == expected }
            try await Task.sleep(for: .seconds(3))  // past the lease: anything re-sent would arrive
            let all = pairs()
            let duplicates = all.count - Set(all).count
            print("push crash: killed after \(atKill) accepted; \(all.count) sends for \(expected.count) notifications, \(duplicates) duplicates")
            if duplicates > concurrency {  // explained below, or a failure
                let counts = Dictionary(all.map { ($0, 1) }, uniquingKeysWith: +).filter { $0.value > 1 }
                let order = all.enumerated().filter { counts[$0.element] != nil }.map { "\($0.offset):\($0.element.suffix(14))" }
                print("push crash: repeated sends (index in accept order: pair) \(order)")
                print("push crash: first process output:\n\(first.output.suffix(6000))\nsecond:\n\(push.output.suffix(6000))")
            }
            #expect(Set(all) == expected, "none lost")
            // Besides the sends in flight at the kill, a send is repeated only when the service could
            // not know it had been accepted: the provider answered after the request timeout (a
            // busy machine), or the outcome was not recorded; each is logged. Anything else repeated
            // is a bug.
            let outputs = first.output + push.output
            let retried = outputs.components(separatedBy: "push notification to be retried").count - 1
            let unrecorded = outputs.components(separatedBy: "push outcomes not recorded").count - 1
            let explained = concurrency + retried + unrecorded * concurrency
            #expect(
                duplicates <= explained,
                "\(duplicates) duplicates: only the \(concurrency) sends in flight at the kill, \(retried) retried and \(unrecorded) unrecorded batches may repeat"
            )
            #expect(fcm.accepted.value.allSatisfy { $0.collapseKey == $0.data["chat_id"] })
            try await database.withClient { db in
                var statuses: [String: Int64] = [:]
                for try await (status, n) in try await db.query("SELECT status, count(*) FROM notifications GROUP BY status").decode((String, Int64).self) {
                    statuses[status] = n
                }
                #expect(statuses == ["sent": 300], "\(statuses)")
            }
        }
    }
}
