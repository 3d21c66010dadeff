import Common
import Foundation

/// The run's figures, computed once at the end from the send and delivery logs.
struct LoadGenReport: Encodable {
    /// "chatsuite" or the peer's name.
    var server = "chatsuite"
    var protocolName = ""
    var inject = ""
    var sockets = 0
    var socketsReady = 0
    var socketsFailed = 0
    var socketsDropped = 0
    /// Sockets whose handshake (Socket.IO joins, native identify, STOMP subscribes) neither
    /// completed nor failed within the handshake timeout: every one is a server bug.
    var socketsUnanswered = 0
    var channels = 0
    var members = 0
    var users = 0
    var rate = 0
    var seconds = 0
    var messages = 0
    var sent = 0
    var sendFailed = 0
    var sendLate = 0
    var sendMaxLagMs = 0.0
    var sendRate = 0.0
    var expected = 0
    var received = 0
    var deliveriesPerSecond = 0.0
    var lost = 0
    var duplicated = 0
    var misrouted = 0
    var unexpected = 0
    var otherFrames = 0
    var sequenceGaps = 0
    var latencyP50Ms = 0.0
    var latencyP95Ms = 0.0
    var latencyP99Ms = 0.0
    var latencyMaxMs = 0.0
    /// With a second gateway (`--second-gateway`): each half's p50 / p95 / p99, the first half's
    /// sockets (on `--gateway`) first.
    var halves: [Percentiles]?
    /// Issue → acknowledgement of the accepted sends (the REST response, or the broker's
    /// acknowledgement of an injected record): the part of the latency before the message is
    /// committed and on its way.
    var acknowledgement: Percentiles?
    /// Issue → the first socket that received each message: the path without the spread of
    /// writing one message to all its sockets.
    var firstReceipt: Percentiles?
    /// Deliveries later than `tailThresholdMs` (the p99 target), and how many of them belong to
    /// messages sent in each second of the run (seconds from the first send): whether the tail is
    /// spread over the run or bunched into a few stalls, and when.
    var tailDeliveries = 0
    var tailBySecond: [Int: Int] = [:]
    static let tailThresholdMs = 25.0

    struct Percentiles: Encodable, Equatable {
        var p50Ms: Double
        var p95Ms: Double
        var p99Ms: Double

        /// Of sorted latencies.
        init(sorted latencies: [Double]) {
            func pct(_ p: Double) -> Double { latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
            p50Ms = pct(0.50)
            p95Ms = pct(0.95)
            p99Ms = pct(0.99)
        }
    }
    var gatewayRssBeforeKiB: Int?
    var gatewayRssIdleKiB: Int?
    var gatewayRssEndKiB: Int?
    var gatewayRssPerIdleSocketKiB: Double?
    var loadgenRssPerSocketKiB: Double?
    /// CPU seconds per watched process during the send phase and drain.
    var cpuSeconds: [String: Double] = [:]
    /// The same processes' user and system seconds and context switches over that time.
    var cpuSplit: [String: ProcessStats.Usage] = [:]
    var measuredSeconds = 0.0

    /// Fills the delivery figures. A delivery counts once per (socket, message); repeats are
    /// duplicates; one on a socket that does not follow the message's channel is misrouted; one
    /// of a message whose send was not accepted is unexpected.
    /// With `secondHalfFrom`, the latencies of the sockets from that index on (a second gateway's)
    /// and of those before are also reported apart (`halves`).
    mutating func analyse(world: LoadGenWorld, sends: SendLog.State, deliveries: [DeliveryLog.Delivery], secondHalfFrom: Int? = nil) {
        let plan = world.plan
        let total = sends.issued.count
        messages = total
        sent = sends.accepted.lazy.filter { $0 }.count
        sendFailed = sends.failures.values.reduce(0, +)
        sendLate = sends.late
        sendMaxLagMs = sends.maxLagMs
        let issuedCount = sends.issued.lazy.filter { $0 > 0 }.count
        let window = Double(sends.lastIssue &- sends.firstIssue) / 1e9 + 1 / Double(max(rate, 1))
        sendRate = sends.firstIssue > 0 ? Double(issuedCount) / window : 0
        expected = (0..<total).reduce(0) { $0 + (sends.accepted[$1] ? world.socketsPerChannel[$1 % plan.channels] : 0) }

        var seen = Set<Int>(minimumCapacity: expected)
        var latencies: [Double] = []
        latencies.reserveCapacity(deliveries.count)
        var byHalf: [[Double]] = [[], []]
        var lastDelivery: UInt64 = 0
        var firstReceived = [UInt64](repeating: .max, count: total)
        for d in deliveries {
            let n = Int(d.message)
            guard n >= 0, n < total else { unexpected += 1; continue }
            guard sends.accepted[n] else { unexpected += 1; continue }
            let socket = Int(d.socket)
            guard seen.insert(socket * total + n).inserted else { duplicated += 1; continue }
            let channel = n % plan.channels
            let user = plan.user(ofSocket: socket)
            let offset = ((user - channel * plan.members) % plan.users + plan.users) % plan.users
            guard offset < plan.members else { misrouted += 1; continue }
            received += 1
            lastDelivery = max(lastDelivery, d.nanos)
            firstReceived[n] = min(firstReceived[n], d.nanos)
            let latency = Double(d.nanos &- sends.issued[n]) / 1e6
            latencies.append(latency)
            if let secondHalfFrom { byHalf[socket >= secondHalfFrom ? 1 : 0].append(latency) }
            if latency > Self.tailThresholdMs {
                tailDeliveries += 1
                tailBySecond[Int((sends.issued[n] &- sends.firstIssue) / 1_000_000_000), default: 0] += 1
            }
        }
        lost = expected - received
        if sends.firstIssue > 0, lastDelivery > sends.firstIssue {
            deliveriesPerSecond = Double(received) / (Double(lastDelivery - sends.firstIssue) / 1e9)
        }
        latencies.sort()
        let all = Percentiles(sorted: latencies)
        latencyP50Ms = all.p50Ms
        latencyP95Ms = all.p95Ms
        latencyP99Ms = all.p99Ms
        latencyMaxMs = latencies.last ?? 0
        if secondHalfFrom != nil { halves = byHalf.map { Percentiles(sorted: $0.sorted()) } }
        let firsts = (0..<total).compactMap { n in firstReceived[n] == .max ? nil : Double(firstReceived[n] &- sends.issued[n]) / 1e6 }
        firstReceipt = firsts.isEmpty ? nil : Percentiles(sorted: firsts.sorted())
        if sends.acknowledged.count == total {
            let acks = (0..<total).compactMap { n in
                sends.accepted[n] && sends.acknowledged[n] >= sends.issued[n] ? Double(sends.acknowledged[n] - sends.issued[n]) / 1e6 : nil
            }
            acknowledgement = acks.isEmpty ? nil : Percentiles(sorted: acks.sorted())
        }
    }

    func summary(failures: [String: Int], socketErrors: [String: Int]) -> String {
        var lines: [String] = []
        func add(_ s: String) { lines.append(s) }
        func f(_ v: Double, _ d: Int = 1) -> String { String(format: "%.\(d)f", v) }
        add("──── chatsuite loadgen: \(server) ─────────────────────────────")
        add("setup        \(users) users, \(channels) channels × \(members) members; protocol \(protocolName); inject \(inject)")
        add(
            "sockets      \(sockets) opened: \(socketsReady) ready, \(socketsFailed) failed, \(socketsUnanswered) never answered, \(socketsDropped) dropped during the run"
        )
        add(
            "sent         \(sent) of \(messages) accepted (\(sendFailed) failed) at \(f(sendRate)) msgs/s (target \(rate)/s for \(seconds) s); \(sendLate) late > \(f(OpenLoopSchedule.lateTolerance, 0)) ms after their slot (max lag \(f(sendMaxLagMs)) ms)"
        )
        add(
            "deliveries   \(received) received of \(expected) expected = \(f(deliveriesPerSecond)) /s; lost \(lost), duplicated \(duplicated), misrouted \(misrouted), unexpected \(unexpected), other frames \(otherFrames), seq gaps \(sequenceGaps)"
        )
        add("latency      send→receive p50 \(f(latencyP50Ms, 2)) ms  p95 \(f(latencyP95Ms, 2)) ms  p99 \(f(latencyP99Ms, 2)) ms  max \(f(latencyMaxMs, 2)) ms")
        for (name, half) in zip(["first half (--gateway)", "second half (--second-gateway)"], halves ?? []) {
            add("             \(name): p50 \(f(half.p50Ms, 2)) ms  p95 \(f(half.p95Ms, 2)) ms  p99 \(f(half.p99Ms, 2)) ms")
        }
        if let ack = acknowledgement {
            let by = inject == "kafka" ? "the broker's acknowledgement" : inject == "rest" ? "the REST response" : "the publish response"
            add("             send→acknowledged p50 \(f(ack.p50Ms, 2)) ms  p95 \(f(ack.p95Ms, 2)) ms  p99 \(f(ack.p99Ms, 2)) ms (\(by))")
        }
        if let first = firstReceipt {
            add("             send→first socket p50 \(f(first.p50Ms, 2)) ms  p95 \(f(first.p95Ms, 2)) ms  p99 \(f(first.p99Ms, 2)) ms")
        }
        if tailDeliveries > 0 {
            add(
                "tail         \(tailDeliveries) deliveries over \(f(Self.tailThresholdMs, 0)) ms (\(f(Double(tailDeliveries) / Double(max(received, 1)) * 100, 2)) %); by second of sending: "
                    + tailBySecond.sorted { $0.key < $1.key }.map { "\($0.key)s \($0.value)" }.joined(separator: ", "))
        }
        if let before = gatewayRssBeforeKiB, let idle = gatewayRssIdleKiB {
            add(
                "server RSS   before sockets \(f(Double(before) / 1024)) MiB, sockets open and idle \(f(Double(idle) / 1024)) MiB, end \(gatewayRssEndKiB.map { f(Double($0) / 1024) } ?? "?") MiB"
            )
            add("             RSS per idle socket = (\(idle) − \(before)) KiB / \(socketsReady) = \(f(gatewayRssPerIdleSocketKiB ?? 0, 2)) KiB")
        }
        if let own = loadgenRssPerSocketKiB { add("loadgen      own RSS per open socket (client side) \(f(own, 2)) KiB") }
        if !cpuSeconds.isEmpty {
            add(
                "CPU          over \(f(measuredSeconds)) s of sending + drain: "
                    + cpuSeconds.sorted { $0.key < $1.key }.map { "\($0.key) \(f($0.value)) s (\(f($0.value / max(measuredSeconds, 0.001) * 100, 0))%)" }
                    .joined(separator: ", "))
        }
        if !cpuSplit.isEmpty {
            add(
                "CPU split    "
                    + cpuSplit.sorted { $0.key < $1.key }.map { name, usage in
                        "\(name) user \(f(usage.userSeconds, 2)) + system \(f(usage.systemSeconds, 2)) s, switches \(usage.voluntarySwitches) voluntary / \(usage.involuntarySwitches) involuntary"
                    }
                    .joined(separator: "; "))
        }
        for (reason, count) in failures.sorted(by: { $0.value > $1.value }).prefix(5) { add("send failure \(count)× \(reason)") }
        for (reason, count) in socketErrors.sorted(by: { $0.value > $1.value }).prefix(5) { add("socket error \(count)× \(reason)") }
        add("────────────────────────────────────────────────────────────────")
        return lines.joined(separator: "\n")
    }

    func jsonLine() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
