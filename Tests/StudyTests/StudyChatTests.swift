import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import SuiteTesting
import Testing

/// Study chat (client contract §3.1–§3.2): REST send and history, and live `chat` events on the
/// Socket.IO default namespace after `changesocketid`, through Kafka and a real chat-fanout, to
/// python-socketio 5 (EIO4) and 4.6 (EIO3) clients over WebSocket only, as the apps connect.
@Suite("Study chat through the gateway", .serialized)
struct StudyChatTests {
    typealias T = StudyUserTests
    typealias Q = StudyQueueTests

    static func send(_ s: Stack, _ from: Q.Person, to: Q.Person, _ text: String, json: Bool = false) async throws -> TestResponse {
        let encoded = text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        if json {
            let body = String(decoding: try JSONSerialization.data(withJSONObject: ["chat": text]), as: UTF8.self)
            return try await T.call(s, .post, "/v1/chat/\(to.uid)", token: from.token, json: body)
        }
        return try await T.call(s, .post, "/v1/chat/\(to.uid)", token: from.token, form: "chat=\(encoded)")
    }

    static func history(_ s: Stack, _ who: Q.Person, with other: Q.Person, after: String = "2000-01-01T00:00:00.000Z") async throws -> [[String: Any]] {
        let query = after.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let answer = try await Q.json(s, .get, "/v1/chat/\(other.uid)?lastchatDate=\(query)", who)
        return try #require(answer["payload"] as? [[String: Any]])
    }

    @Test("matched users chat over REST; each one's EIO3 or EIO4 socket gets the other's chats once, in order, with the five string keys")
    func liveAndHistory() async throws {
        try await T.withStudy { s, key in
            let fanout = try await s.startFanoutReplica("fanout-study")
            let a = try await Q.person(s, key, nick: "에이")
            let b = try await Q.person(s, key, nick: "비")
            let eve = try await Q.person(s, key, nick: "이브")
            try await Q.match(s, a, b)
            let port = try #require(s.client.port)
            let socketA = try PythonSocketClient.start(.eio3, port: port, namespaces: [], transports: "websocket", changesocketid: a.uid)
            let socketB = try PythonSocketClient.start(.eio4, port: port, namespaces: [], transports: "websocket", changesocketid: b.uid)
            let socketEve = try PythonSocketClient.start(.eio4, port: port, namespaces: [], transports: "websocket", changesocketid: eve.uid)
            #expect(try await socketA.waitFor("ready")["version"] as? String == "4.6.1")
            try await socketB.waitFor("ready")
            try await socketEve.waitFor("ready")

            // The sessions' interest reaches the fan-out through Kafka: send until B hears one.
            var sent: [[String: Any]] = []
            try await eventually("B's socket hears A", timeout: .seconds(60)) {
                let response = try await Self.send(s, a, to: b, "안녕 \(sent.count)")
                try #require(response.status.code == 200)
                sent.append(try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]))
                try await Task.sleep(for: .milliseconds(200))
                return !socketB.events("chat").isEmpty
            }
            try await eventually("A's socket hears B", timeout: .seconds(60)) {
                let response = try await Self.send(s, b, to: a, "반가워 \(sent.count)", json: true)
                try #require(response.status.code == 200)
                sent.append(try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]))
                try await Task.sleep(for: .milliseconds(200))
                return !socketA.events("chat").isEmpty
            }
            for i in 0..<5 {
                for (from, to) in [(a, b), (b, a)] {
                    let response = try await Self.send(s, from, to: to, "\(from.nick) → \(to.nick) #\(i)")
                    try #require(response.status.code == 200)
                    sent.append(try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]))
                }
            }
            let first = try #require(sent.first)
            #expect(Set(first.keys) == ["_id", "__v", "to", "from", "chat", "createdAt"])
            #expect(first["from"] as? String == a.uid && first["to"] as? String == b.uid && (first["_id"] as? String)?.count == 24)

            // Live: each socket gets exactly the chats addressed to it, in order, once.
            for (socket, me) in [(socketA, a), (socketB, b)] {
                let expected = sent.filter { $0["to"] as? String == me.uid }
                try await eventually("\(me.nick) got every chat", timeout: .seconds(20)) {
                    let heard = socket.events("chat")
                    let got = Set(heard.compactMap { $0["_id"] as? String })
                    return expected.allSatisfy { got.contains($0["_id"] as? String ?? "") }
                }
                try await Task.sleep(for: .milliseconds(300))
                let heard = socket.events("chat")
                // Probes sent before the fan-out knew the session were not delivered; the rest, once each.
                let ids = heard.compactMap { $0["_id"] as? String }
                #expect(Set(ids).count == ids.count, "no duplicates")
                #expect(ids == expected.map { $0["_id"] as? String ?? "" }.filter { ids.contains($0) }, "in order")
                for event in heard {
                    #expect(Set(event.keys) == ["_id", "chat", "createdAt", "from", "to"] && event.values.allSatisfy { $0 is String }, "\(event)")
                    let rest = try #require(sent.first { $0["_id"] as? String == event["_id"] as? String })
                    for k in ["chat", "createdAt", "from", "to"] { #expect(event[k] as? String == rest[k] as? String, "\(k)") }
                }
            }
            #expect(socketEve.events("chat").isEmpty, "a third user's socket hears nothing")

            // History: both directions, oldest first, the bound exclusive to the millisecond.
            let all = try await Self.history(s, a, with: b)
            #expect(all.map { $0["_id"] as? String } == sent.map { $0["_id"] as? String })
            #expect(try await Self.history(s, b, with: a).count == sent.count)
            let pivot = try #require(sent[sent.count - 4]["createdAt"] as? String)
            let later = try await Self.history(s, a, with: b, after: pivot)
            #expect(later.allSatisfy { ($0["createdAt"] as? String ?? "") > pivot } && later.count <= 3 && !later.isEmpty)
            #expect(try await Self.history(s, eve, with: a).isEmpty, "nobody else's chats")
            // Exclusive to the millisecond for every chat's own date (a bound sent through a
            // floating-point date once let the chat at the bound back in).
            for chat in sent {
                let date = try #require(chat["createdAt"] as? String)
                let after = try await Self.history(s, b, with: a, after: date)
                #expect(after.allSatisfy { ($0["createdAt"] as? String ?? "") > date }, "after \(date)")
                #expect(after.count == sent.filter { ($0["createdAt"] as? String ?? "") > date }.count, "after \(date)")
            }

            // The study ends: sending is 201 both ways; history stays.
            #expect(try await Q.code(s, .post, "/v1/queue/dodge", a, form: "otheruid=\(b.uid)") == 200)
            #expect(try await Self.send(s, a, to: b, "더 있어요").status.code == 201)
            #expect(try await Self.send(s, b, to: a, "저도요").status.code == 201)
            #expect(try await Self.history(s, b, with: a).count == sent.count)
            try await socketA.stop()
            try await socketB.stop()
            try await socketEve.stop()
            try await fanout.stop()
        }
    }

    @Test("chat refusals: 201 not studying together, 501 empty, over-long or a bad date, 406 unregistered, 401")
    func refusals() async throws {
        try await T.withStudy { s, key in
            let a = try await Q.person(s, key, nick: "에이")
            let b = try await Q.person(s, key, nick: "비")
            let stranger = Q.Person(uid: "uid-nobody", token: try await key.token(uid: "uid-nobody", project: T.project), nick: "")
            #expect(try await Self.send(s, a, to: b, "아직").status.code == 201, "not matched")
            try await Q.match(s, a, b)
            #expect(try await Self.send(s, a, to: a, "나에게").status.code == 201, "to oneself")
            #expect(try await Self.send(s, a, to: stranger, "누구").status.code == 201)
            #expect(try await Self.send(s, stranger, to: a, "누구").status.code == 406)
            #expect(try await T.call(s, .get, "/v1/chat/\(a.uid)?lastchatDate=2000-01-01T00:00:00.000Z", token: stranger.token).status.code == 406)
            // Too long in characters, and short in characters but long in bytes (a letter with 50
            // combining accents is one character of 101 bytes: 100 of them are 10 100 bytes).
            let heavy = String(repeating: "a" + String(repeating: "\u{0301}", count: 50), count: 100)
            #expect(heavy.count == 100 && heavy.utf8.count > 4 * 1_000)
            for bad in ["", "   ", String(repeating: "가", count: 1_001), heavy] {
                #expect(try await Self.send(s, a, to: b, bad).status.code == 501, "\(bad.count) characters")
            }
            #expect(try await T.call(s, .post, "/v1/chat/\(b.uid)", token: a.token, form: "message=hi").status.code == 501)
            #expect(try await T.call(s, .get, "/v1/chat/\(b.uid)?lastchatDate=yesterday", token: a.token).status.code == 501)
            #expect(try await T.call(s, .post, "/v1/chat/\(b.uid)", token: nil, form: "chat=hi").status.code == 401)
            #expect(try await Self.send(s, a, to: b, String(repeating: "가", count: 1_000)).status.code == 200)
            // Over the body limit (64 KiB): 413, and the service goes on answering.
            let huge = "chat=" + String(repeating: "x", count: 70_000)
            #expect(try await T.call(s, .post, "/v1/chat/\(b.uid)", token: a.token, form: huge).status.code == 413)
            #expect(try await Self.send(s, a, to: b, "아직 살아있어요").status.code == 200)
            #expect(try await Q.json(s, .get, "/v1/chat/\(b.uid)", a)["payload"] as? [Any] != nil, "no date: everything")
        }
    }
}

extension StudyChatTests {
    @Test("with the compatibility mode off, only a handshake's verified idtoken lets changesocketid follow a uid, and only its own")
    func verifiedSockets() async throws {
        try await T.withStudy(gateway: ["GATEWAY_SOCKETIO_ANONYMOUS": "false"]) { s, key in
            let fanout = try await s.startFanoutReplica("fanout-study-verified")
            let a = try await Q.person(s, key, nick: "에이")
            let b = try await Q.person(s, key, nick: "비")
            let eve = try await Q.person(s, key, nick: "이브")
            try await Q.match(s, a, b)
            let port = try #require(s.client.port)
            // A proves A (EIO3, as socket.io-client-swift 15 with `extraHeaders`); Eve proves Eve but
            // claims A; an unchanged client claims A without proof; an expired token proves nothing.
            let expired = try await key.token(uid: a.uid, project: T.project, issuedAt: Date().addingTimeInterval(-7200), ttl: 3600)
            let proven = try PythonSocketClient.start(
                .eio3, port: port, namespaces: [], transports: "websocket", changesocketid: a.uid, headers: ["idtoken": a.token])
            let impostor = try PythonSocketClient.start(
                .eio4, port: port, namespaces: [], transports: "websocket", changesocketid: a.uid, headers: ["idtoken": eve.token])
            let unproven = try PythonSocketClient.start(.eio4, port: port, namespaces: [], transports: "websocket", changesocketid: a.uid)
            let stale = try PythonSocketClient.start(
                .eio4, port: port, namespaces: [], transports: "websocket", changesocketid: a.uid, headers: ["idtoken": expired])
            for client in [proven, impostor, unproven, stale] { try await client.waitFor("ready") }
            try await eventually("A's proven socket hears B", timeout: .seconds(60)) {
                #expect(try await Self.send(s, b, to: a, "안녕").status.code == 200)
                try await Task.sleep(for: .milliseconds(200))
                return !proven.events("chat").isEmpty
            }
            #expect(try await Self.send(s, b, to: a, "마지막").status.code == 200)
            try await eventually("the last chat arrives") { proven.events("chat").contains { $0["chat"] as? String == "마지막" } }
            try await Task.sleep(for: .milliseconds(500))
            #expect(impostor.events("chat").isEmpty && unproven.events("chat").isEmpty && stale.events("chat").isEmpty)
            for client in [proven, impostor, unproven, stale] { try await client.stop() }
            try await fanout.stop()
        }
    }
}
