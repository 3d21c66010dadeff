import ArgumentParser
import AsyncHTTPClient
import Foundation
import Kafka
import Logging
import NIOCore

/// `chatsuite loadgen`: a real-time load generator against a running suite (`chatsuite dev`).
/// Sets up users, workspaces, channels and memberships over REST; opens sockets (Socket.IO and/or
/// the native protocol) that follow their users' channels; sends messages at a fixed rate (REST,
/// or straight to Kafka); reports deliveries, loss, duplicates, send→receive latency and the
/// gateway's memory per idle socket. docs/benchmarks.md, "Real-time load generator".
struct LoadGenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "loadgen", abstract: "Real-time load generator: sockets, message fan-out, delivery latency.")

    enum Inject: String, ExpressibleByArgument { case rest, kafka }

    @Option(help: "Gateway base URL.") var gateway = "http://127.0.0.1:8080"
    @Option(help: "SesacKey header value.") var sesacKey = "dev-key"
    @Option(help: "Channels.") var channels = 500
    @Option(help: "Members per channel.") var members = 10
    @Option(help: "Users (default channels × members; fewer are reused round-robin across channels).") var users: Int?
    @Option(help: "Sockets (default channels × members); socket s belongs to user s mod users and follows all of its channels.") var sockets: Int?
    @Option(name: .customLong("protocol"), help: "socketio, native or mixed (even sockets Socket.IO, odd native).") var proto: LoadGenProtocol = .socketio
    @Option(help: "Channels per workspace (one workspace per this many channels).") var channelsPerWorkspace = 100
    @Option(help: "Messages per second (open loop).") var rate = 1000
    @Option(help: "Seconds of sending.") var seconds = 30
    @Option(help: "Concurrent send workers.") var senders = 64
    @Option(help: "Seconds to wait for outstanding deliveries after the last send.") var drainSeconds = 5
    @Option(help: "rest (POST …/chats through the gateway) or kafka (produce chat.message.v1 events directly; needs --brokers).") var inject: Inject = .rest
    @Option(help: "Kafka bootstrap servers for --inject kafka (chatsuite dev prints them).") var brokers: String?
    @Option(help: "Gateway process id: its RSS is sampled before the sockets open, when they are open and idle, and at the end.") var gatewayPid: Int32?
    @Option(help: "name=pid of a process whose CPU time (with its direct children's) over the send phase is reported (repeatable), e.g. postgres=<postmaster pid>.") var watch: [String] = []
    @Option(help: "REST requests in flight during setup.") var setupConcurrency = 16
    @Option(help: "WebSocket handshakes in flight.") var handshakes = 64
    @Option(help: "Seconds the open sockets stay idle before the idle RSS sample.") var idleSeconds = 5
    @Flag(help: "Also print the figures as one JSON line.") var json = false

    func run() async throws {
        let fileLimit = ProcessStats.raiseFileLimit()
        let plan = LoadGenPlan(
            runId: String(UUID().uuidString.prefix(8)).lowercased(), users: users ?? channels * members, channels: channels, members: members,
            sockets: sockets ?? channels * members, channelsPerWorkspace: channelsPerWorkspace
        )
        try plan.validate()
        guard rate >= 1, seconds >= 1, senders >= 1 else { throw ValidationError("--rate, --seconds and --senders must be positive") }
        if inject == .kafka, brokers == nil { throw ValidationError("--inject kafka needs --brokers") }
        if plan.sockets + 64 > fileLimit { throw ValidationError("\(plan.sockets) sockets need more file descriptors than the limit \(fileLimit)") }
        var watched: [(String, Int32)] = try watch.map { entry -> (String, Int32) in
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let pid = Int32(parts[1]) else { throw ValidationError("--watch expects name=pid") }
            return (String(parts[0]), pid)
        }
        if let gatewayPid, !watched.contains(where: { $0.1 == gatewayPid }) { watched.append(("gateway", gatewayPid)) }
        watched.append(("loadgen", getpid()))
        say("loadgen run \(plan.runId): open-files limit \(fileLimit)")

        var httpConfig = HTTPClient.Configuration()
        httpConfig.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(senders, setupConcurrency * 2))
        httpConfig.timeout = .init(connect: .seconds(10), read: .seconds(60))
        let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: httpConfig)
        var producer: KafkaProducer?
        do {
            let client = GatewayClient(base: gateway, sesacKey: sesacKey, http: http)
            let world = try await LoadGenSetup(rest: LoadGenREST(client: client), plan: plan, concurrency: setupConcurrency).run()
            try checkTokens(world)
            let sink: any MessageSink
            if inject == .kafka, let brokers {
                var logger = Logger(label: "loadgen.kafka")
                logger.logLevel = .error
                let p = try KafkaProducer(configuration: KafkaProducerConfiguration(client: KafkaClientConfiguration(bootstrapServers: brokers, clientId: "loadgen")), logger: logger)
                producer = p
                sink = KafkaSink(producer: p, world: world)
            } else {
                sink = RESTSink(client: client, world: world)
            }
            try await measure(world: world, sink: sink, watched: watched)
        } catch {
            try? await producer?.flush()
            try? await http.shutdown()
            throw error
        }
        try? await producer?.flush()
        try await http.shutdown()
    }

    /// Access tokens live `auth.access-ttl-seconds` (600 s by default): a run that outlives them
    /// would measure E05 answers, so stop early and say how to avoid it.
    private func checkTokens(_ world: LoadGenWorld) throws {
        let needed = Date().timeIntervalSince1970 + Double(seconds + drainSeconds + idleSeconds) + 180
        if let first = world.users.compactMap(\.expires).min(), first < needed {
            throw LoadGenError("access tokens expire \(Int(first - Date().timeIntervalSince1970)) s from now, before the run would end: start the suite with AUTH_ACCESS_TTL_SECONDS=86400 (or use fewer --users)")
        }
    }

    private func measure(world: LoadGenWorld, sink: any MessageSink, watched: [(String, Int32)]) async throws {
        let plan = world.plan
        let rssBefore = gatewayPid.flatMap(ProcessStats.rssKiB)
        let ownBefore = ProcessStats.rssKiB(pid: getpid())
        let log = DeliveryLog(expected: rate * seconds * max(1, plan.sockets * plan.members / max(plan.users, 1)))
        let specs = (0..<plan.sockets).map { s -> LoadGenSocketSpec in
            let user = plan.user(ofSocket: s)
            let kind: LoadGenSocketSpec.Kind = switch proto {
            case .socketio: .socketio
            case .native: .native
            case .mixed: s % 2 == 0 ? .socketio : .native
            }
            return LoadGenSocketSpec(index: s, kind: kind, token: world.users[user].token,
                                     channels: world.channelsByUser[user].map { ($0, world.channels[$0].id) })
        }
        say("opening \(plan.sockets) \(proto.rawValue) sockets (\(handshakes) handshakes in flight)")
        let pool = SocketPool(specs: specs, gatewayURL: gateway, markers: DeliveryMarkers(runId: plan.runId), log: log, handshakes: handshakes)
        let openStarted = ContinuousClock.now
        pool.start()
        let (ready, failed) = await pool.waitForHandshakes(timeout: .seconds(120 + plan.sockets / 50))
        say(String(format: "  %d sockets ready, %d failed in %.1f s", ready, failed, (ContinuousClock.now - openStarted).milliseconds / 1000))
        for (reason, count) in log.socketEvents.errors.sorted(by: { $0.value > $1.value }).prefix(5) { say("  socket error \(count)× \(reason)") }
        guard ready > 0 else {
            await pool.stop()
            throw LoadGenError("no socket could be opened (\(log.socketEvents.errors.keys.sorted().first ?? "no error reported"))")
        }

        try await Task.sleep(for: .seconds(idleSeconds))
        let rssIdle = gatewayPid.flatMap(ProcessStats.rssKiB)
        let ownIdle = ProcessStats.rssKiB(pid: getpid())

        let readySockets = log.socketEvents.readySockets
        let unconfirmed = try await LoadGenProbe(world: world, sink: sink, log: log, concurrency: senders).run(readySockets: readySockets, timeout: .seconds(120))
        if !unconfirmed.isEmpty { say("  WARNING: \(unconfirmed.count) channels never delivered a probe to all their sockets (first: \(unconfirmed.prefix(5)))") }
        try await Task.sleep(for: .seconds(1))

        // Expected deliveries count the sockets that were ready when sending started.
        var perChannel = [Int](repeating: 0, count: plan.channels)
        for s in log.socketEvents.readySockets { for c in world.channelsByUser[plan.user(ofSocket: s)] { perChannel[c] += 1 } }
        let measuredWorld = LoadGenWorld(plan: plan, users: world.users, channels: world.channels, channelsByUser: world.channelsByUser, socketsPerChannel: perChannel)
        let total = rate * seconds
        let expected = (0..<total).reduce(0) { $0 + perChannel[$1 % plan.channels] }
        say("sending \(total) messages at \(rate)/s for \(seconds) s via \(inject.rawValue) with \(senders) workers (\(expected) deliveries expected)")
        let cpuStart = watched.map { ProcessStats.cpuSeconds(pid: $0.1) }
        let sendStarted = ContinuousClock.now
        let sends = SendLog(messages: total)
        await OpenLoopSchedule(rate: rate, messages: total, workers: senders).run(plan: plan, sink: sink, log: sends)
        say(String(format: "  sending done in %.1f s; draining up to %d s", (ContinuousClock.now - sendStarted).milliseconds / 1000, drainSeconds))
        let accepted = sends.snapshot.accepted
        let acceptedExpected = (0..<total).reduce(0) { $0 + (accepted[$1] ? perChannel[$1 % plan.channels] : 0) }
        let drainEnd = ContinuousClock.now + .seconds(drainSeconds)
        while ContinuousClock.now < drainEnd, log.deliveryCount < acceptedExpected {
            try await Task.sleep(for: .milliseconds(100))
        }
        let measuredSeconds = (ContinuousClock.now - sendStarted).milliseconds / 1000
        let cpuEnd = watched.map { ProcessStats.cpuSeconds(pid: $0.1) }
        let rssEnd = gatewayPid.flatMap(ProcessStats.rssKiB)
        let deliveries = log.allDeliveries
        let events = log.socketEvents
        await pool.stop()

        var report = LoadGenReport()
        report.protocolName = proto.rawValue
        report.inject = inject.rawValue
        report.sockets = plan.sockets
        report.socketsReady = ready
        report.socketsFailed = events.failed
        report.socketsDropped = events.droppedAfterReady
        report.channels = plan.channels
        report.members = plan.members
        report.users = plan.users
        report.rate = rate
        report.seconds = seconds
        report.otherFrames = events.otherMessages
        report.sequenceGaps = events.sequenceGaps
        report.analyse(world: measuredWorld, sends: sends.snapshot, deliveries: deliveries)
        report.gatewayRssBeforeKiB = rssBefore
        report.gatewayRssIdleKiB = rssIdle
        report.gatewayRssEndKiB = rssEnd
        if let rssBefore, let rssIdle { report.gatewayRssPerIdleSocketKiB = Double(rssIdle - rssBefore) / Double(ready) }
        if let ownBefore, let ownIdle { report.loadgenRssPerSocketKiB = Double(ownIdle - ownBefore) / Double(ready) }
        report.measuredSeconds = measuredSeconds
        for (i, (name, _)) in watched.enumerated() {
            if let a = cpuStart[i], let b = cpuEnd[i] { report.cpuSeconds[name] = b - a }
        }
        say(report.summary(failures: sends.snapshot.failures, socketErrors: events.errors))
        if json { say(report.jsonLine()) }
    }
}
