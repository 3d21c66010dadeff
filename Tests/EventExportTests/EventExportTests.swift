import EventExport
import Events
import Foundation
import Kafka
import Logging
import TestSupport
import Testing

@Suite("chatsuite events export")
struct EventExportTests {
    @Test("events spanning hours land in one file per topic and UTC hour, with personal data nulled by default")
    func exportsByTopicAndHour() async throws {
        let cluster = try TestKafka.catalogCluster()
        let workspace = WorkspaceID.generate()
        let channel = ChannelID.generate()
        let user = UserID.generate()
        let base = ExportFixtures.hourStart(hoursAgo: 3)
        // 3 messages in hour 0, 2 in hour 1, 1 in hour 2; one an hour before `since`.
        let minutes = [(0, 5), (0, 20), (0, 59), (1, 0), (1, 30), (2, 10)]
        var records = try minutes.map { h, m in
            try ExportFixtures.channelMessage(
                workspace: workspace, channel: channel, from: user, text: "msg \(h):\(m)", at: base.addingTimeInterval(Double(h * 3600 + m * 60)))
        }
        records.append(try ExportFixtures.channelMessage(workspace: workspace, channel: channel, from: user, text: "old", at: base.addingTimeInterval(-600)))
        records.append(try ExportFixtures.record(PaymentEvents.CoinsCredited(billingId: UUID(), userId: user, amount: 100, balance: 100, version: 1), at: base))
        records.append(try ExportFixtures.record(AuthEvents.UserDeleted(userId: user), at: base))  // a topic not exported
        records.append(KafkaProducerMessage(topic: Topic.payment.name, key: "x", value: Array("not json".utf8)))
        records.append(KafkaProducerMessage(topic: Topic.payment.name, key: "y", value: nil))
        try await ExportFixtures.produce(records, to: cluster)

        let out = ExportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let summary = try await EventExporter.run(
            ExportRequest(brokers: cluster.bootstrapServers, topics: ["chat.message.v1", "payment.v1"], since: base, until: nil, outDirectory: out),
            logger: TestKafka.logger)
        #expect(summary.events == ["chat.message.v1": 6, "payment.v1": 1])
        #expect(summary.outOfRange == 1)
        #expect(summary.unreadable == 2)
        #expect(summary.redacted == 6)

        let files = try ExportFixtures.lines(under: out)
        func dir(_ topic: String, _ hour: Int) -> String { "\(topic)/" + Self.partition(base.addingTimeInterval(Double(hour * 3600))) }
        let counts = Dictionary(files.map { (String($0.key.split(separator: "/").dropLast().joined(separator: "/")), $0.value.count) }, uniquingKeysWith: +)
        #expect(counts == [dir("chat.message.v1", 0): 3, dir("chat.message.v1", 1): 2, dir("chat.message.v1", 2): 1, dir("payment.v1", 0): 1])
        #expect(files.keys.allSatisfy { $0.split(separator: "/").last?.hasPrefix("part-") == true })
        for (path, events) in files where path.hasPrefix("chat.message.v1/") {
            for event in events {
                #expect(event["type"] as? String == "chat.channel-message.created")
                #expect(event["specversion"] as? String == "1.0" && event["dataschema"] is String)
                let data = try #require(event["data"] as? [String: Any])
                #expect(data["content"] is NSNull, "message text is nulled")
                let sender = try #require(data["sender"] as? [String: Any])
                #expect(sender["email"] is NSNull && sender["nickname"] is NSNull)
                #expect(sender["userId"] as? String == user.description, "ids stay")
                #expect(data["channelId"] as? String == channel.description)
            }
        }
        let payment = try #require(files.first { $0.key.hasPrefix("payment.v1/") }?.value.first)
        #expect((payment["data"] as? [String: Any])?["amount"] as? Int == 100)

        // --include-pii keeps the text; --until bounds the range (hour 0 only).
        let withPII = ExportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: withPII) }
        let second = try await EventExporter.run(
            ExportRequest(
                brokers: cluster.bootstrapServers, topics: ["chat.message.v1"], since: base, until: base.addingTimeInterval(3600), outDirectory: withPII,
                includePersonalData: true), logger: TestKafka.logger)
        #expect(second.events == ["chat.message.v1": 3] && second.redacted == 0 && second.outOfRange == 4)
        let texts = try ExportFixtures.lines(under: withPII).values.flatMap { $0 }.compactMap { ($0["data"] as? [String: Any])?["content"] as? String }
        #expect(Set(texts) == ["msg 0:5", "msg 0:20", "msg 0:59"])
    }

    @Test("a --since after the newest record reads nothing and writes no file")
    func sinceAfterEverything() async throws {
        let cluster = try TestKafka.catalogCluster()
        let user = UserID.generate()
        try await ExportFixtures.produce(
            [try ExportFixtures.record(PaymentEvents.CoinsCredited(billingId: UUID(), userId: user, amount: 1, balance: 1, version: 1), at: Date())],
            to: cluster)
        let out = ExportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let summary = try await EventExporter.run(
            ExportRequest(brokers: cluster.bootstrapServers, topics: ["payment.v1"], since: Date().addingTimeInterval(3600), until: nil, outDirectory: out),
            logger: TestKafka.logger)
        #expect(summary.events == ["payment.v1": 0] && summary.outOfRange == 1)
        #expect(try ExportFixtures.lines(under: out).isEmpty)
    }

    @Test("redaction nulls exactly the listed fields and leaves other types alone")
    func redaction() throws {
        var registered: [String: Any] = [
            "type": "auth.user.registered", "data": ["userId": "u", "email": "a@b.c", "nickname": "n", "createdAt": "t"] as [String: Any],
        ]
        #expect(PersonalDataRedaction.redact(&registered))
        let data = try #require(registered["data"] as? [String: Any])
        #expect(data["email"] is NSNull && data["nickname"] is NSNull && data["userId"] as? String == "u" && data["profileImage"] == nil)
        var credited: [String: Any] = ["type": "payment.coins.credited", "data": ["amount": 5] as [String: Any]]
        #expect(!PersonalDataRedaction.redact(&credited))
    }

    @Test("times and durations parse; anything else is refused with the accepted forms")
    func times() throws {
        let now = Date(timeIntervalSince1970: 1_763_630_000)
        #expect(try ExportTime.parse("2025-11-20T09:15:32.417Z") == Date(timeIntervalSince1970: 1_763_630_132.417))
        #expect(try ExportTime.parse("2025-11-20T09:00:00+09:00") == Date(timeIntervalSince1970: 1_763_596_800))
        #expect(try ExportTime.parse("2025-11-20") == Date(timeIntervalSince1970: 1_763_596_800))
        #expect(try ExportTime.parse("1h30m", now: now) == now.addingTimeInterval(-5400))
        #expect(try ExportTime.parse("7d", now: now) == now.addingTimeInterval(-7 * 86400))
        for bad in ["yesterday", "", "5", "h", "10x", "2025-13-40"] {
            #expect(throws: ExportError.self, "\(bad)") { try ExportTime.parse(bad, now: now) }
        }
    }

    @Test("bad arguments exit with a clear message and a usage exit code, not a crash")
    func badArguments() async throws {
        let cluster = try TestKafka.catalogCluster()
        let out = ExportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let cases: [([String], Int32, String)] = [
            (["--topics", "chat.message.v1", "--since", "yesterday", "--out", out.path], 64, "is neither a time"),
            (["--topics", "chat.message.v1", "--since", "1h", "--until", "2h", "--out", out.path], 64, "is not after --since"),
            (["--topics", ",", "--since", "1h", "--out", out.path], 64, "names no topic"),
            (["--since", "1h", "--out", out.path], 64, "Missing expected argument '--topics"),
            (["--topics", "chat.message.v1", "--since", "1h", "--out", "/etc/hostname"], 64, "is a file"),
            (["--topics", "no.such.topic", "--since", "1h", "--out", out.path], 1, "unknown topic no.such.topic"),
        ]
        for (arguments, code, message) in cases {
            let process = try TestProcess(
                executable: "chatsuite", arguments: ["events", "export", "--brokers", cluster.bootstrapServers] + arguments)
            let status = try await process.waitForExit(timeout: .seconds(60))
            #expect(status == code, "\(arguments): \(process.output)")
            #expect(process.output.contains(message), "\(arguments): \(process.output)")
        }
    }

    static func partition(_ date: Date) -> String {
        let text = Timestamp.format(date)  // yyyy-MM-ddTHH:…
        return "date=\(text.prefix(10))/hour=\(text.dropFirst(11).prefix(2))"
    }
}
