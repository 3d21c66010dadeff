import EventExport
import Events
import Foundation
import Kafka
import TestSupport
import Testing

/// docs/analytics.md's worked example, run as written: known traffic on an embedded broker, an
/// export, and each ```sql block of the page through DuckDB (.devdata/pyenv-analytics, made by
/// scripts/setup-debian.sh), compared with the counts computed from the traffic sent.
/// scripts/analytics-check.sh runs it with CHATSUITE_ANALYTICS_REQUIRED=1 (fails without DuckDB);
/// elsewhere it runs when the venv exists.
@Suite("docs/analytics.md worked example")
struct AnalyticsExampleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = root.appendingPathComponent(".devdata/pyenv-analytics/bin/python").path
    static let required = ProcessInfo.processInfo.environment["CHATSUITE_ANALYTICS_REQUIRED"] == "1"

    /// The named ```sql blocks of docs/analytics.md (the first line is `-- <name>`).
    static func queries() throws -> [String: String] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/analytics.md"), encoding: .utf8)
        var result: [String: String] = [:]
        for block in text.components(separatedBy: "```sql\n").dropFirst() {
            guard let body = block.components(separatedBy: "```").first else { continue }
            let lines = body.split(separator: "\n", omittingEmptySubsequences: false)
            guard let first = lines.first, first.hasPrefix("-- ") else { continue }
            result[String(first.dropFirst(3))] = body
        }
        return result
    }

    struct Message {
        let channel: ChannelID?  // nil: a DM
        let user: UserID
        let time: Date
    }

    @Test(
        "messages per channel per hour, daily active users and coins bought per day match the traffic sent",
        .enabled(if: FileManager.default.isExecutableFile(atPath: python) || required))
    func workedExample() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: Self.python), "no DuckDB venv: run scripts/setup-debian.sh")
        let queries = try Self.queries()
        #expect(Set(queries.keys) == ["messages_per_channel_per_hour", "daily_active_users", "coins_bought_per_day"])

        let cluster = try TestKafka.catalogCluster()
        let (u1, u2, u3) = (UserID.generate(), UserID.generate(), UserID.generate())
        let (c1, c2) = (ChannelID.generate(), ChannelID.generate())
        let workspace = WorkspaceID.generate()
        let room = RoomID.generate()
        // Yesterday's UTC midnight: the traffic spans 22:00 yesterday to 02:00 today.
        let day1 = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 86400).rounded(.down) * 86400 - 86400)
        func at(_ hour: Int, _ minute: Int) -> Date { day1.addingTimeInterval(Double(hour * 3600 + minute * 60)) }
        let messages = [
            Message(channel: c1, user: u1, time: at(22, 5)), Message(channel: c1, user: u2, time: at(22, 30)),
            Message(channel: c2, user: u3, time: at(22, 45)), Message(channel: c1, user: u1, time: at(23, 10)),
            Message(channel: c1, user: u2, time: at(24, 15)), Message(channel: c1, user: u2, time: at(25, 5)),
            Message(channel: c2, user: u2, time: at(25, 50)), Message(channel: nil, user: u3, time: at(24, 20)),
        ]
        var records: [KafkaProducerMessage] = []
        for m in messages {
            if let channel = m.channel {
                records.append(try ExportFixtures.channelMessage(workspace: workspace, channel: channel, from: m.user, text: "hi", at: m.time))
            } else {
                let dm = ChatEvents.DirectMessageCreated(
                    messageId: MessageID.generate(), workspaceId: workspace, roomId: room, participants: [u1, u3].sorted(),
                    sender: ExportFixtures.sender(m.user), content: "hi", files: [], createdAt: m.time)
                records.append(try ExportFixtures.record(dm, at: m.time, source: "chat"))
            }
        }
        // At least once: the fifth message delivered twice (same event id). An edit by u1 on day 2
        // is no message and does not make u1 active.
        records.append(records[4])
        records.append(
            try ExportFixtures.record(
                ChatEvents.MessageEdited(
                    messageId: MessageID.generate(), workspaceId: workspace, conversation: .channel(c1), senderId: u1, content: "edit", mentions: nil,
                    editedAt: at(24, 30)), at: at(24, 30)))
        let purchases = [(u1, 100, at(22, 0)), (u2, 50, at(23, 59)), (u1, 30, at(24, 1))]
        var balance = 0
        for (user, amount, time) in purchases {
            balance += amount
            records.append(
                try ExportFixtures.record(
                    PaymentEvents.CoinsCredited(billingId: UUID(), userId: user, amount: amount, balance: balance, version: 1), at: time))
        }
        records.append(records[records.count - 1])  // a purchase delivered twice
        records.append(
            try ExportFixtures.record(
                PaymentEvents.CoinsDebited(requestId: CoinRequestID.generate(), workspaceId: workspace, userId: u1, amount: 10, balance: 120, version: 2),
                at: at(24, 2)))
        try await ExportFixtures.produce(records, to: cluster)

        let directory = ExportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let summary = try await EventExporter.run(
            ExportRequest(
                brokers: cluster.bootstrapServers, topics: [Topic.chatMessage.name, Topic.payment.name], since: day1, until: nil,
                outDirectory: directory.appendingPathComponent("export")), logger: TestKafka.logger)
        #expect(summary.events == [Topic.chatMessage.name: messages.count + 2, Topic.payment.name: purchases.count + 2])

        let answers = try await Self.runDuckDB(queries, in: directory)

        // What the traffic says, computed from what was sent.
        func hour(_ d: Date) -> String { Self.text(d, length: 13) + ":00:00" }
        func day(_ d: Date) -> String { Self.text(d, length: 10) }
        var perHour: [[String]: Int] = [:]
        for m in messages { if let c = m.channel { perHour[[c.description, hour(m.time)], default: 0] += 1 } }
        let expectedPerHour = perHour.map { $0.key + [String($0.value)] }.sorted { ($0[1], $0[0]) < ($1[1], $1[0]) }
        var active: [String: Set<UserID>] = [:]
        for m in messages { active[day(m.time), default: []].insert(m.user) }
        let expectedActive = active.keys.sorted().map { [$0, String(active[$0]?.count ?? 0)] }
        var bought: [String: (Int, Int)] = [:]
        for (_, amount, time) in purchases { bought[day(time), default: (0, 0)].0 += 1; bought[day(time), default: (0, 0)].1 += amount }
        let expectedBought = bought.keys.sorted().map { [$0, String(bought[$0]?.0 ?? 0), String(bought[$0]?.1 ?? 0)] }

        #expect(answers["messages_per_channel_per_hour"] == expectedPerHour)
        #expect(answers["daily_active_users"] == expectedActive)
        #expect(answers["coins_bought_per_day"] == expectedBought)
        // The traffic is what the comparison needs: two days, several hours, both channels.
        #expect(expectedActive.count == 2 && expectedPerHour.count == 6 && expectedBought.count == 2)
    }

    /// `yyyy-MM-dd HH` (13) or `yyyy-MM-dd` (10) of a UTC time, as DuckDB prints it.
    static func text(_ date: Date, length: Int) -> String {
        String(Timestamp.format(date).replacingOccurrences(of: "T", with: " ").prefix(length))
    }

    /// Runs each query with `directory` as the working directory; every value as DuckDB's Python
    /// `str` of it (timestamps `2025-11-20 09:00:00`, dates `2025-11-20`).
    static func runDuckDB(_ queries: [String: String], in directory: URL) async throws -> [String: [[String]]] {
        let input = directory.appendingPathComponent("queries.json")
        try JSONSerialization.data(withJSONObject: queries).write(to: input)
        let script = """
            import duckdb, json, os, sys
            os.chdir(sys.argv[1])
            queries = json.load(open(sys.argv[2]))
            con = duckdb.connect()
            out = {name: [[str(v) for v in row] for row in con.execute(sql).fetchall()] for name, sql in queries.items()}
            print("RESULT " + json.dumps(out))
            """
        let process = try TestProcess(path: python, arguments: ["-c", script, directory.path, input.path])
        let status = try await process.waitForExit(timeout: .seconds(120))
        guard status == 0, let line = process.output.split(separator: "\n").first(where: { $0.hasPrefix("RESULT ") }),
            let answers = try JSONSerialization.jsonObject(with: Data(line.dropFirst(7).utf8)) as? [String: [[String]]]
        else {
            throw ExportTestError("DuckDB failed (\(status.map(String.init) ?? "timeout")): \(process.output)")
        }
        return answers
    }
}
