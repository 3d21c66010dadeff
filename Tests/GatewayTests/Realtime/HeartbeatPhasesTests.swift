import Testing

@testable import GatewayApp

/// `HeartbeatPhases`: sessions opened together get first pings spread over the ping interval
/// (docs/benchmarks.md, part 30).
@Suite("Heartbeat phases")
struct HeartbeatPhasesTests {
    @Test("every advance lies within [0, period)")
    func advancesWithinThePeriod() {
        let phases = HeartbeatPhases()
        let period = Duration.seconds(25)
        for _ in 0..<10_000 {
            let advance = phases.nextAdvance(period: period)
            #expect(advance >= .zero && advance < period, "\(advance)")
        }
    }

    /// 5 000 sessions opened at one instant, pinged by the server's 1 s ticks: all within one
    /// interval, and no tick carries more than a few above its even share (25 ticks, 200 each).
    /// With every first ping a full interval after the open (the old behaviour) the whole 5 000
    /// fell into one tick.
    @Test("sessions opened together are pinged over the interval, evenly")
    func openedTogetherPingApart() {
        let phases = HeartbeatPhases()
        let interval = Duration.seconds(25)
        let tick = Duration.seconds(1)
        var perTick: [Int: Int] = [:]
        for _ in 0..<5_000 {
            // The session's first ping is due at interval − advance after the open; the tick after.
            let due = interval - phases.nextAdvance(period: interval)
            let ticks = Int((due / tick).rounded(.up))
            perTick[ticks, default: 0] += 1
        }
        let first = perTick.keys.min() ?? 0
        let last = perTick.keys.max() ?? 0
        #expect(first >= 0 && last <= 25, "ticks \(first)…\(last)")
        #expect(perTick.count >= 25, "\(perTick.count) ticks carry pings")
        let busiest = perTick.values.max() ?? 0
        #expect(busiest <= 210, "the busiest tick carries \(busiest) pings")
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
