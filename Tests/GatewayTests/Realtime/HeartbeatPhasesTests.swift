import Testing

@testable import GatewayApp

/// `HeartbeatPhases`: sessions opened together get first pings spread over the second half of the
/// ping interval (docs/benchmarks.md, part 30).
@Suite("Heartbeat phases")
struct HeartbeatPhasesTests {
    @Test("every advance lies within [0, period / 2)")
    func advancesWithinHalfThePeriod() {
        let phases = HeartbeatPhases()
        let period = Duration.seconds(25)
        for _ in 0..<10_000 {
            let advance = phases.nextAdvance(period: period)
            #expect(advance >= .zero && advance < period / 2, "\(advance)")
        }
    }

    /// 5 000 sessions opened at one instant, pinged by the server's 250 ms ticks: none before half
    /// an interval, all within one, and no tick carries more than a few above its even share
    /// (50 ticks, 100 each). With every first ping a full interval after the open (the old
    /// behaviour) the whole 5 000 fell into one tick.
    @Test("sessions opened together are pinged over half an interval, evenly")
    func openedTogetherPingApart() {
        let phases = HeartbeatPhases()
        let interval = Duration.seconds(25)
        let tick = Duration.milliseconds(250)
        var perTick: [Int: Int] = [:]
        for _ in 0..<5_000 {
            // The session's first ping is due at interval − advance after the open; the tick after.
            let due = interval - phases.nextAdvance(period: interval)
            let ticks = Int((due / tick).rounded(.up))
            perTick[ticks, default: 0] += 1
        }
        let first = perTick.keys.min() ?? 0
        let last = perTick.keys.max() ?? 0
        #expect(first >= 50 && last <= 100, "ticks \(first)…\(last)")
        #expect(perTick.count >= 50, "\(perTick.count) ticks carry pings")
        let busiest = perTick.values.max() ?? 0
        #expect(busiest <= 110, "the busiest tick carries \(busiest) pings")
    }

    @Test("the sequence's shares cover [0, 1) evenly for any run of consecutive members")
    func sharesAreEven() {
        for start in [UInt64(0), 1, 977, 1 << 40] {
            var bins = [Int](repeating: 0, count: 10)
            for n in start..<(start + 1_000) {
                let share = HeartbeatPhases.share(n)
                #expect(share >= 0 && share < 1)
                bins[Int(share * 10)] += 1
            }
            #expect(bins.allSatisfy { (95...105).contains($0) }, "from \(start): \(bins)")
        }
    }
}
