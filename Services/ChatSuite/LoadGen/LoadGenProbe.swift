import Foundation

/// Before measuring: every channel gets probe messages until each ready socket that follows it
/// has received one — proof that memberships, the gateway's interest records and fan-out are all
/// in place, so the measured run does not count start-up as loss.
struct LoadGenProbe {
    let world: LoadGenWorld
    let sink: any MessageSink
    let log: DeliveryLog
    let concurrency: Int

    /// Returns the channels still unconfirmed when `timeout` passed (empty on success).
    func run(readySockets: Set<Int>, timeout: Duration) async throws -> [Int] {
        let plan = world.plan
        var followers = [[Int]](repeating: [], count: plan.channels)
        for s in readySockets {
            for c in world.channelsByUser[plan.user(ofSocket: s)] { followers[c].append(s) }
        }
        var pending = Set((0..<plan.channels).filter { !followers[$0].isEmpty })
        let started = ContinuousClock.now
        var round = 0
        while !pending.isEmpty, ContinuousClock.now - started < timeout {
            round += 1
            let targets = pending.sorted()
            let sink = self.sink
            let runId = plan.runId
            _ = try await concurrentMap(targets.count, limit: concurrency) { i in
                let c = targets[i]
                _ = await sink.send(channel: c, sender: plan.member(0, of: c), content: DeliveryMarkers.content(runId: runId, probeOf: c))
            }
            let roundEnd = ContinuousClock.now + .seconds(3)
            while !pending.isEmpty, ContinuousClock.now < roundEnd {
                try await Task.sleep(for: .milliseconds(200))
                pending = pending.filter { c in !followers[c].allSatisfy { log.hasProbe(socket: $0, channel: c) } }
            }
            say(
                String(
                    format: "  probe round %d: %d/%d channels confirmed on every socket (%.1f s)", round, plan.channels - pending.count, plan.channels,
                    (ContinuousClock.now - started).milliseconds / 1000))
        }
        return pending.sorted()
    }
}
