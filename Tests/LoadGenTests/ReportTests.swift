import Common
import Events
import Foundation
import Testing
@testable import LoadGen

@Suite("Load generator report: deliveries, loss, duplicates, percentiles")
struct ReportTests {
    static func world(_ plan: LoadGenPlan) -> LoadGenWorld {
        let users = (0..<plan.users).map { LoadGenUser(id: .generate(), email: "u\($0)@example.com", nickname: "u\($0)", token: "t\($0)", expires: nil) }
        let channels = (0..<plan.channels).map { LoadGenChannel(workspaceId: .generate(), id: .generate(), name: "c\($0)") }
        return LoadGenWorld(plan: plan, users: users, channels: channels, channelsByUser: plan.channelsByUser(), socketsPerChannel: plan.socketsPerChannel())
    }

    static func sends(issued: [UInt64], accepted: [Bool]) -> SendLog.State {
        var state = SendLog.State(issued: issued, accepted: accepted)
        state.firstIssue = issued.filter { $0 > 0 }.min() ?? 0
        state.lastIssue = issued.max() ?? 0
        return state
    }

    /// 2 users, 2 channels, both users in both, one socket each.
    static let bothInBoth = LoadGenPlan(runId: "r", users: 2, channels: 2, members: 2, sockets: 2, channelsPerWorkspace: 2)
    static let ms: UInt64 = 1_000_000

    static func delivery(_ socket: Int32, _ message: Int32, _ nanos: UInt64) -> DeliveryLog.Delivery {
        DeliveryLog.Delivery(socket: socket, message: message, nanos: nanos)
    }

    /// 2 channels, both users in both, one socket per user: every message should reach 2 sockets.
    @Test func countsReceivedLostDuplicatedAndUnexpected() {
        let plan = LoadGenPlan(runId: "r", users: 2, channels: 2, members: 2, sockets: 2, channelsPerWorkspace: 2)
        let ms: UInt64 = 1_000_000
        let t0: UInt64 = 1_000_000_000
        // Messages 0, 1, 2 accepted; 3 refused.
        let sends = Self.sends(issued: [t0, t0 + 10 * ms, t0 + 20 * ms, t0 + 30 * ms], accepted: [true, true, true, false])
        let deliveries = [
            Self.delivery(0, 0, t0 + 1 * ms),
            Self.delivery(1, 0, t0 + 2 * ms),
            Self.delivery(0, 0, t0 + 5 * ms),  // duplicate
            Self.delivery(0, 1, t0 + 13 * ms),
            Self.delivery(1, 3, t0 + 31 * ms),  // its send was refused: unexpected
            Self.delivery(1, 9, t0 + 40 * ms),  // no such message: unexpected
            Self.delivery(0, 2, t0 + 24 * ms),
        ]
        var report = LoadGenReport()
        report.rate = 100
        report.analyse(world: Self.world(plan), sends: sends, deliveries: deliveries)
        #expect(report.messages == 4)
        #expect(report.sent == 3)
        #expect(report.expected == 6)
        #expect(report.received == 4)
        #expect(report.lost == 2)
        #expect(report.duplicated == 1)
        #expect(report.unexpected == 2)
        #expect(report.misrouted == 0)
        // Latencies 1, 2, 3, 4 ms: p50 is the element at ⌊4 × 0.5⌋.
        #expect(report.latencyP50Ms == 3)
        #expect(report.latencyP95Ms == 4)
        #expect(report.latencyP99Ms == 4)
        #expect(report.latencyMaxMs == 4)
        // 4 messages issued over 30 ms plus one slot (10 ms) = 100 /s.
        #expect(abs(report.sendRate - 100) < 0.001)
        // 4 deliveries from the first issue to the last counted delivery (24 ms).
        #expect(abs(report.deliveriesPerSecond - 4 / 0.024) < 0.001)
    }

    @Test("the tail: deliveries over 25 ms, counted by the second of sending their message was sent in")
    func tailBySecondOfSending() {
        let plan = Self.bothInBoth
        let ms = Self.ms
        let t0: UInt64 = 5_000_000_000
        // Message 0 at 0 s, 1 at 0.5 s, 2 at 2.2 s; both sockets follow both channels.
        let sends = Self.sends(issued: [t0, t0 + 500 * ms, t0 + 2_200 * ms], accepted: [true, true, true])
        let deliveries = [
            Self.delivery(0, 0, t0 + 3 * ms),
            Self.delivery(1, 0, t0 + 26 * ms),  // late: second 0
            Self.delivery(0, 1, t0 + 500 * ms + 25 * ms),  // exactly 25 ms: not over
            Self.delivery(1, 1, t0 + 500 * ms + 90 * ms),  // late: second 0
            Self.delivery(0, 2, t0 + 2_200 * ms + 40 * ms),  // late: second 2
            Self.delivery(1, 2, t0 + 2_200 * ms + 1 * ms),
        ]
        var report = LoadGenReport()
        report.rate = 2
        report.analyse(world: Self.world(plan), sends: sends, deliveries: deliveries)
        #expect(report.received == 6)
        #expect(report.tailDeliveries == 3)
        #expect(report.tailBySecond == [0: 2, 2: 1])
        let summary = report.summary(failures: [:], socketErrors: [:])
        #expect(summary.contains("tail         3 deliveries over 25 ms (50.00 %); by second of sending: 0s 2, 2s 1"))
    }

    @Test("each accepted send's acknowledgement and each message's first socket, apart from the whole spread")
    func acknowledgementAndFirstReceipt() {
        let (ms, t0) = (Self.ms, UInt64(1_000_000_000))
        // Messages 0 and 1 accepted (acknowledged after 2 and 4 ms), 2 refused.
        var sends = Self.sends(issued: [t0, t0 + 100 * ms, t0 + 200 * ms], accepted: [true, true, false])
        sends.acknowledged = [t0 + 2 * ms, t0 + 104 * ms, 0]
        let deliveries = [
            Self.delivery(1, 0, t0 + 9 * ms),
            Self.delivery(0, 0, t0 + 3 * ms),  // message 0's first socket, after 3 ms
            Self.delivery(0, 1, t0 + 100 * ms + 30 * ms),
            Self.delivery(1, 1, t0 + 100 * ms + 6 * ms),  // message 1's first, after 6 ms
            Self.delivery(0, 2, t0 + 201 * ms),  // refused send: not counted anywhere
        ]
        var report = LoadGenReport()
        report.rate = 10
        report.inject = "rest"
        report.analyse(world: Self.world(Self.bothInBoth), sends: sends, deliveries: deliveries)
        #expect(report.acknowledgement == LoadGenReport.Percentiles(sorted: [2, 4]))
        #expect(report.firstReceipt == LoadGenReport.Percentiles(sorted: [3, 6]))
        #expect(report.acknowledgement?.p50Ms == 4)
        #expect(report.firstReceipt?.p99Ms == 6)
        // The whole spread: 3, 6, 9, 30 ms.
        #expect(report.latencyMaxMs == 30)
        let summary = report.summary(failures: [:], socketErrors: [:])
        #expect(summary.contains("send→acknowledged p50 4.00 ms  p95 4.00 ms  p99 4.00 ms (the REST response)"))
        #expect(summary.contains("send→first socket p50 6.00 ms  p95 6.00 ms  p99 6.00 ms"))
    }

    @Test("without acknowledgement times, no acknowledgement line")
    func noAcknowledgementsNoLine() {
        var report = LoadGenReport()
        report.rate = 1
        report.analyse(world: Self.world(Self.bothInBoth), sends: Self.sends(issued: [1_000], accepted: [true]), deliveries: [])
        #expect(report.acknowledgement == nil)
        #expect(report.firstReceipt == nil)
        #expect(!report.summary(failures: [:], socketErrors: [:]).contains("send→acknowledged"))
    }

    @Test("the CPU split line: each watched process's user and system seconds and its switches, by name")
    func cpuSplitLine() {
        var report = LoadGenReport()
        report.measuredSeconds = 30
        report.cpuSeconds = ["gateway": 8.06, "chat-fanout": 3.5]
        report.cpuSplit = [
            "gateway": ProcessStats.Usage(userSeconds: 3.24, systemSeconds: 4.82, voluntarySwitches: 43_308, involuntarySwitches: 82_372),
            "chat-fanout": ProcessStats.Usage(userSeconds: 2.25, systemSeconds: 1.25, voluntarySwitches: 38_325, involuntarySwitches: 14_029),
        ]
        let summary = report.summary(failures: [:], socketErrors: [:])
        #expect(
            summary.contains(
                "CPU split    chat-fanout user 2.25 + system 1.25 s, switches 38325 voluntary / 14029 involuntary; gateway user 3.24 + system 4.82 s, switches 43308 voluntary / 82372 involuntary"
            ))
        // Without readings there is no line.
        #expect(!LoadGenReport().summary(failures: [:], socketErrors: [:]).contains("CPU split"))
    }

    @Test func aDeliveryToASocketOutsideTheChannelIsMisrouted() {
        // One member per channel: channel 0 is user 0's, channel 1 user 1's.
        let plan = LoadGenPlan(runId: "r", users: 2, channels: 2, members: 1, sockets: 2, channelsPerWorkspace: 2)
        let sends = Self.sends(issued: [10, 20], accepted: [true, true])
        var report = LoadGenReport()
        report.analyse(world: Self.world(plan), sends: sends, deliveries: [Self.delivery(1, 0, 30), Self.delivery(0, 0, 40), Self.delivery(1, 1, 50)])
        #expect(report.expected == 2)
        #expect(report.received == 2)
        #expect(report.misrouted == 1)
        #expect(report.lost == 0)
    }

    @Test("with a second gateway each half's latencies are reported apart, the first half's first")
    func halvesApart() {
        // Two members per channel, four sockets: sockets 0–1 are the first half, 2–3 the second.
        let plan = LoadGenPlan(runId: "r", users: 2, channels: 1, members: 2, sockets: 4, channelsPerWorkspace: 1)
        let sends = Self.sends(issued: [1_000_000], accepted: [true])
        let deliveries = [(0, 2), (1, 4), (2, 10), (3, 30)].map { Self.delivery(Int32($0.0), 0, UInt64(1_000_000 + $0.1 * 1_000_000)) }
        var report = LoadGenReport()
        report.analyse(world: Self.world(plan), sends: sends, deliveries: deliveries, secondHalfFrom: 2)
        #expect(report.received == 4)
        #expect(report.halves?.map(\.p50Ms) == [4, 30])
        #expect(report.halves?.map(\.p99Ms) == [4, 30])
        let summary = report.summary(failures: [:], socketErrors: [:])
        #expect(summary.contains("first half (--gateway): p50 4.00 ms") && summary.contains("second half (--second-gateway): p50 30.00 ms"))
        var single = LoadGenReport()
        single.analyse(world: Self.world(plan), sends: sends, deliveries: deliveries)
        #expect(single.halves == nil)
        #expect(!single.summary(failures: [:], socketErrors: [:]).contains("half"))
    }

    @Test func nothingSentGivesZeroesNotACrash() {
        let plan = LoadGenPlan(runId: "r", users: 1, channels: 1, members: 1, sockets: 1, channelsPerWorkspace: 1)
        var report = LoadGenReport()
        report.analyse(world: Self.world(plan), sends: Self.sends(issued: [0, 0], accepted: [false, false]), deliveries: [])
        #expect(report.sent == 0)
        #expect(report.expected == 0)
        #expect(report.sendRate == 0)
        #expect(report.latencyP99Ms == 0)
        #expect(report.deliveriesPerSecond == 0)
    }

    @Test func summaryAndJSONCarryTheFigures() throws {
        var report = LoadGenReport()
        report.protocolName = "native"
        report.inject = "kafka"
        report.received = 12
        report.expected = 15
        report.lost = 3
        report.gatewayRssBeforeKiB = 1024
        report.gatewayRssIdleKiB = 3072
        report.socketsReady = 4
        report.gatewayRssPerIdleSocketKiB = 512
        report.cpuSeconds = ["gateway": 1.5]
        report.measuredSeconds = 3
        let summary = report.summary(failures: ["HTTP 503 E99": 2], socketErrors: [:])
        #expect(summary.contains("protocol native; inject kafka"))
        #expect(summary.contains("12 received of 15 expected"))
        #expect(summary.contains("lost 3"))
        #expect(summary.contains("RSS per idle socket = (3072 − 1024) KiB / 4 = 512.00 KiB"))
        #expect(summary.contains("gateway 1.5 s (50%)"))
        #expect(summary.contains("send failure 2× HTTP 503 E99"))

        let object = try #require(try JSONSerialization.jsonObject(with: Data(report.jsonLine().utf8)) as? [String: Any])
        #expect(object["received"] as? Int == 12)
        #expect(object["protocolName"] as? String == "native")
        #expect((object["cpuSeconds"] as? [String: Double])?["gateway"] == 1.5)
        #expect(!report.jsonLine().contains("\n"))
    }
}

@Suite("Closed-loop runner (gateway benchmarks)")
struct LoadRunnerTests {
    @Test func percentilesAndRate() {
        var result = LoadRunner.Result()
        result.ok = 10
        result.failed = 1
        result.seconds = 2
        result.latencies = [10, 1, 9, 2, 8, 3, 7, 4, 6, 5]
        #expect(result.perSecond == 5)
        #expect(result.percentile(0.5) == 6)
        #expect(result.percentile(0.9) == 10)
        #expect(result.percentile(0.99) == 10)
        #expect(result.percentile(0) == 1)
        #expect(LoadRunner.Result().percentile(0.5) == 0)
        #expect(LoadRunner.Result().perSecond == 0)
        #expect(
            result.line("logins", concurrency: 3)
                == "logins: 10 ok, 1 failed in 2.0 s = 5.0/s (concurrency 3); latency p50 6.00 ms  p90 10.00 ms  p99 10.00 ms")
    }

    @Test func runsEveryClientUntilTheTimeIsUp() async throws {
        // A second, not 100 ms: on a loaded two-core CI machine 100 ms can pass before any call ends.
        let result = try await LoadRunner(concurrency: 3, duration: .seconds(1)).run { client, iteration in
            try await Task.sleep(for: .milliseconds(5))
            return !(client == 0 && iteration % 2 == 1)  // client 0 fails every other call
        }
        #expect(result.ok > 10)
        #expect(result.failed > 0)
        #expect(result.latencies.count == result.ok)
        #expect(result.seconds >= 0.1)
        #expect(LoadRunner.milliseconds(.seconds(1) + .microseconds(500)) == 1000.5)
    }
}
