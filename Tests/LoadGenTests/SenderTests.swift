import Common
import Testing
@testable import LoadGen

/// Records every send; `deliver` is what the "suite" does with it.
final class FakeSink: MessageSink {
    var name: String { "fake" }
    let sent = Locked<[(channel: Int, sender: Int, content: String)]>([])
    let deliver: @Sendable (_ channel: Int, _ content: String) -> String?

    init(deliver: @escaping @Sendable (_ channel: Int, _ content: String) -> String? = { _, _ in nil }) {
        self.deliver = deliver
    }

    func send(channel: Int, sender: Int, content: String) async -> String? {
        sent.withLock { $0.append((channel, sender, content)) }
        return deliver(channel, content)
    }
}

@Suite("Open-loop sending and start-up probes, against a fake sink")
struct SenderTests {
    let plan = LoadGenPlan(runId: "run1", users: 4, channels: 3, members: 2, sockets: 4, channelsPerWorkspace: 3)

    @Test func everyMessageIsIssuedOnceToItsChannelByAMember() async {
        let sink = FakeSink { _, content in content.hasSuffix("-5") ? "HTTP 503 E99" : nil }
        let log = SendLog(messages: 12)
        await OpenLoopSchedule(rate: 2_000, messages: 12, workers: 4).run(plan: plan, sink: sink, log: log)
        let sent = sink.sent.value.sorted { $0.content.count == $1.content.count ? $0.content < $1.content : $0.content.count < $1.content.count }
        #expect(sent.map(\.content) == (0..<12).map { DeliveryMarkers.content(runId: "run1", message: $0) })
        for (n, message) in sent.enumerated() {
            #expect(message.channel == n % plan.channels)
            // Senders take turns among the channel's members.
            #expect(message.sender == plan.member((n / plan.channels) % plan.members, of: message.channel))
        }
        let state = log.snapshot
        #expect(state.issued.allSatisfy { $0 > 0 })
        #expect(state.accepted.filter { !$0 }.count == 1)
        #expect(!state.accepted[5])
        #expect(state.failures == ["HTTP 503 E99": 1])
        #expect(state.lastIssue >= state.firstIssue)
    }

    @Test func probesRepeatUntilEveryFollowingSocketHasOne() async throws {
        let world = ReportTests.world(plan)
        let log = DeliveryLog(expected: 0)
        // The "suite" delivers a probe of channel c to every socket following it, but drops the
        // first probe of channel 1.
        let dropped = Locked(false)
        let sink = FakeSink { channel, content in
            guard content == DeliveryMarkers.content(runId: "run1", probeOf: channel) else { return "not a probe" }
            if channel == 1 {
                let first = dropped.withLock { wasDropped -> Bool in
                    defer { wasDropped = true }
                    return !wasDropped
                }
                if first { return nil }
            }
            for s in 0..<plan.sockets where world.channelsByUser[plan.user(ofSocket: s)].contains(channel) { log.probed(socket: s, channel: channel) }
            return nil
        }
        let unconfirmed = try await LoadGenProbe(world: world, sink: sink, log: log, concurrency: 2).run(readySockets: [0, 1, 2, 3], timeout: .seconds(30))
        #expect(unconfirmed.isEmpty)
        // Round 1 probes the 3 channels, round 2 only channel 1 again.
        #expect(sink.sent.value.map(\.channel).sorted() == [0, 1, 1, 2])
        #expect(sink.sent.value.allSatisfy { $0.sender == plan.member(0, of: $0.channel) })
    }

    @Test func channelsWithoutReadyFollowersAreNotProbedAndSilentOnesAreReported() async throws {
        let world = ReportTests.world(plan)
        let log = DeliveryLog(expected: 0)
        let sink = FakeSink()  // delivers nothing
        // Socket 2 (user 2) follows channel 1 only.
        let unconfirmed = try await LoadGenProbe(world: world, sink: sink, log: log, concurrency: 2).run(readySockets: [2], timeout: .milliseconds(10))
        #expect(unconfirmed == [1])
        #expect(sink.sent.value.map(\.channel) == [1])
    }
}
