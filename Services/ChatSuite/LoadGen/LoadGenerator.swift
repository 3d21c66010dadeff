import AsyncHTTPClient
import Common
import Foundation
import Kafka
import Logging
import NIOCore

/// What a load-generator run does; `chatsuite loadgen` fills it from its options (the defaults
/// are the command's).
public struct LoadGenOptions: Sendable {
    /// rest: POST …/chats through the gateway; kafka: produce chat.message.v1 events directly.
    public enum Inject: String, Sendable { case rest, kafka }

    public var gateway = "http://127.0.0.1:8080"
    public var sesacKey = "dev-key"
    public var channels = 500
    public var members = 10
    /// Default channels × members; fewer are reused round-robin across channels.
    public var users: Int?
    /// Default channels × members; socket s belongs to user s mod users.
    public var sockets: Int?
    public var proto: LoadGenProtocol = .socketio
    /// STOMP: the interval (ms) at which the sockets ask the server for heart-beats
    /// (`heart-beat:0,N`); 0 asks for none.
    public var stompHeartBeat = 0
    /// STOMP: the clients' own heart-beats, every this many ms (0: none).
    public var stompClientHeartBeat = 0
    public var channelsPerWorkspace = 100
    /// Messages per second (open loop).
    public var rate = 1000
    public var seconds = 30
    public var senders = 64
    public var drainSeconds = 5
    public var inject: Inject = .rest
    /// Kafka bootstrap servers for `.kafka` injection.
    public var brokers: String?
    /// The `.kafka` injection producer's codec.
    public var kafkaCompression = "lz4"
    public var gatewayPid: Int32?
    /// Where the second half of the sockets connect instead: two gateway builds side by side in
    /// one run, each serving the same topology, so the machine's noise meets both alike.
    public var secondGateway: String?
    /// `name=pid` entries of processes whose CPU time over the send phase is reported.
    public var watch: [String] = []
    public var setupConcurrency = 16
    public var handshakes = 64
    public var idleSeconds = 5
    /// Also print the figures as one JSON line.
    public var json = false
    /// `name=pid` entries whose process alone (without its children) is watched: the embedded
    /// broker inside `chatsuite dev`, whose children are the services.
    public var watchAlone: [String] = []
    /// A peer server driven with the same topology after the suite (`--peer nchan`).
    public var peer: LoadGenPeer?
    /// Skip the suite run: only the peer.
    public var peerOnly = false
    public var peerConfig = "bench/peers/nchan.conf"
    /// nginx's worker processes for the peer (`worker_processes`; 1, its best case).
    public var peerWorkers = 1
    public var peerPort = 18990
    public var nginx = "/usr/sbin/nginx"
    /// A file keeping setup's accounts and channels: reused when it exists (same suite, same
    /// plan), written after setup when it does not.
    public var world: String?

    public init() {}
}

/// A peer server the load generator can drive with the suite's topology.
public enum LoadGenPeer: String, Sendable {
    /// nginx + nchan (C pub/sub over WebSocket): subscribers on `/sub/<channels>`, publishes
    /// `POST /pub/<channel>` (bench/peers/nchan.conf).
    case nchan
}

/// A process whose CPU time the report shows.
struct WatchedProcess: Sendable {
    let name: String
    let pid: Int32
    /// With its live direct children (PostgreSQL's backends, nginx's worker).
    let children: Bool

    static func parse(_ entry: String, children: Bool) throws -> WatchedProcess {
        let parts = entry.split(separator: "=", maxSplits: 1)
        guard parts.count == 2, let pid = Int32(parts[1]) else { throw LoadGenUsageError("--watch expects name=pid") }
        return WatchedProcess(name: String(parts[0]), pid: pid, children: children)
    }

    var reading: ProcessStats.Reading? { ProcessStats.reading(pid: pid, withChildren: children) }
}

/// An option value the load generator cannot run with (the command reports it as a usage error).
public struct LoadGenUsageError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A real-time load generator against a running suite (`chatsuite dev`).
/// Sets up users, workspaces, channels and memberships over REST; opens sockets (Socket.IO and/or
/// the native protocol) that follow their users' channels; sends messages at a fixed rate (REST,
/// or straight to Kafka); reports deliveries, loss, duplicates, send→receive latency and the
/// gateway's memory per idle socket. docs/benchmarks.md, "Real-time load generator".
public struct LoadGenerator: Sendable {
    public let options: LoadGenOptions
    let plan: LoadGenPlan
    /// Processes whose CPU time is reported: `--watch`, `--watch-alone`, the gateway, the load
    /// generator itself.
    let watched: [WatchedProcess]
    let fileLimit: Int

    /// Checks the options: the plan (`LoadGenError`), then every other value and the
    /// open-files limit (`LoadGenUsageError`), in the order the command always checked them.
    public init(_ options: LoadGenOptions, runId: String = String(UUID().uuidString.prefix(8)).lowercased(), fileLimit: Int) throws {
        let o = options
        let plan = LoadGenPlan(
            runId: runId, users: o.users ?? o.channels * o.members, channels: o.channels, members: o.members,
            sockets: o.sockets ?? o.channels * o.members, channelsPerWorkspace: o.channelsPerWorkspace
        )
        try plan.validate()
        guard o.rate >= 1, o.seconds >= 1, o.senders >= 1 else { throw LoadGenUsageError("--rate, --seconds and --senders must be positive") }
        if o.inject == .kafka, o.brokers == nil, !o.peerOnly { throw LoadGenUsageError("--inject kafka needs --brokers") }
        let codecs = KafkaProducerConfiguration.compressionCodecs
        guard codecs.contains(o.kafkaCompression) else {
            throw LoadGenUsageError("--kafka-compression must be one of \(codecs.joined(separator: ", ")), not \(o.kafkaCompression)")
        }
        if o.peerOnly, o.peer == nil { throw LoadGenUsageError("--peer-only needs --peer") }
        if plan.sockets + 64 > fileLimit { throw LoadGenUsageError("\(plan.sockets) sockets need more file descriptors than the limit \(fileLimit)") }
        var watched = try o.watch.map { try WatchedProcess.parse($0, children: true) } + o.watchAlone.map { try WatchedProcess.parse($0, children: false) }
        if let gatewayPid = o.gatewayPid, !watched.contains(where: { $0.pid == gatewayPid }) {
            watched.append(WatchedProcess(name: "gateway", pid: gatewayPid, children: true))
        }
        watched.append(WatchedProcess(name: "loadgen", pid: getpid(), children: false))
        self.options = options
        self.plan = plan
        self.watched = watched
        self.fileLimit = fileLimit
    }

    public func run() async throws {
        let o = options
        say("loadgen run \(plan.runId): open-files limit \(fileLimit)")

        var httpConfig = HTTPClient.Configuration()
        httpConfig.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(o.senders, o.setupConcurrency * 2))
        httpConfig.timeout = .init(connect: .seconds(10), read: .seconds(60))
        let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: httpConfig)
        var reports: [LoadGenReport] = []
        do {
            if !o.peerOnly { reports.append(try await runSuite(http: http)) }
            if o.peer == .nchan { reports.append(try await runNchan(http: http)) }
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
        if reports.count > 1 || o.peer != nil { say(LoadGenComparison(reports: reports).table()) }
    }

    /// The suite: setup over REST, then sockets on the gateway and messages via REST or Kafka.
    private func runSuite(http: HTTPClient) async throws -> LoadGenReport {
        let o = options
        var producer: KafkaProducer?
        do {
            let client = GatewayClient(base: o.gateway, sesacKey: o.sesacKey, http: http)
            let world: LoadGenWorld
            if let path = o.world, let saved = try LoadGenWorld.load(from: path, plan: plan) {
                say("setup: reusing the accounts and channels of \(path)")
                world = saved
            } else {
                world = try await LoadGenSetup(rest: LoadGenREST(client: client), plan: plan, concurrency: o.setupConcurrency).run()
                if let path = o.world { try world.save(to: path) }
            }
            try checkTokens(world)
            let sink: any MessageSink
            if o.inject == .kafka, let brokers = o.brokers {
                var logger = Logger(label: "loadgen.kafka")
                logger.logLevel = .error
                var configuration = KafkaProducerConfiguration(client: KafkaClientConfiguration(bootstrapServers: brokers, clientId: "loadgen"))
                configuration.compression = o.kafkaCompression
                let p = try KafkaProducer(configuration: configuration, logger: logger)
                producer = p
                sink = KafkaSink(producer: p, world: world)
            } else {
                sink = try RESTSink(client: client, world: world)
            }
            // The lean client's connections close whether the run completes or throws.
            defer { (sink as? RESTSink)?.lean.close() }
            let report = try await measure(
                server: "chatsuite", world: world, sink: sink, base: o.gateway, kind: o.proto.socketKind, serverPid: o.gatewayPid, watched: watched)
            try? await producer?.flush()
            return report
        } catch {
            try? await producer?.flush()
            throw error
        }
    }

    /// The peer: the same plan (channels, members, sockets, rate) against nginx + nchan.
    private func runNchan(http: HTTPClient) async throws -> LoadGenReport {
        let o = options
        let peer = try await NchanPeer.start(nginx: o.nginx, config: o.peerConfig, port: o.peerPort, workers: o.peerWorkers, http: http)
        do {
            say("nginx + nchan on \(peer.base) (master pid \(peer.pid), worker pids \(peer.workers))")
            let world = LoadGenWorld(peerOf: plan)
            let watched = [
                WatchedProcess(name: "nchan", pid: peer.pid, children: true), WatchedProcess(name: "loadgen", pid: getpid(), children: false),
            ]
            let report = try await measure(
                server: "nginx+nchan", world: world, sink: NchanSink(http: http, base: peer.base, world: world), base: peer.base, kind: .nchan,
                serverPid: peer.workers.first, watched: watched)
            await peer.stop()
            return report
        } catch {
            await peer.stop()
            throw error
        }
    }

    /// Access tokens live `auth.access-ttl-seconds` (600 s by default): a run that outlives them
    /// would measure E05 answers, so stop early and say how to avoid it.
    private func checkTokens(_ world: LoadGenWorld) throws {
        let o = options
        let needed = Date().timeIntervalSince1970 + Double(o.seconds + o.drainSeconds + o.idleSeconds) + 180
        if let first = world.users.compactMap(\.expires).min(), first < needed {
            throw LoadGenError(
                "access tokens expire \(Int(first - Date().timeIntervalSince1970)) s from now, before the run would end: start the suite with AUTH_ACCESS_TTL_SECONDS=86400 (or use fewer --users)"
            )
        }
    }

    /// Opens the sockets on `base`, probes, sends, drains; the figures of one server.
    private func measure(
        server: String, world: LoadGenWorld, sink: any MessageSink, base: String, kind: LoadGenSocketSpec.Kind?, serverPid: Int32?,
        watched: [WatchedProcess]
    ) async throws -> LoadGenReport {
        let o = options
        let plan = world.plan
        let rssBefore = serverPid.flatMap(ProcessStats.rssKiB)
        let ownBefore = ProcessStats.rssKiB(pid: getpid())
        let log = DeliveryLog(expected: o.rate * o.seconds * max(1, plan.sockets * plan.members / max(plan.users, 1)))
        let specs = (0..<plan.sockets).map { s -> LoadGenSocketSpec in
            let user = plan.user(ofSocket: s)
            return LoadGenSocketSpec(
                index: s, kind: kind ?? (s % 2 == 0 ? .socketio : .native), token: world.users[user].token,
                channels: world.channelsByUser[user].map { ($0, world.channels[$0].id) }, stompHeartBeat: o.stompHeartBeat,
                stompClientHeartBeat: o.stompClientHeartBeat)
        }
        say("\(server): opening \(plan.sockets) \(kind?.rawValue ?? o.proto.rawValue) sockets (\(o.handshakes) handshakes in flight)")
        let pool = SocketPool(
            specs: specs, gatewayURL: base, secondGatewayURL: kind == .nchan ? nil : o.secondGateway, markers: DeliveryMarkers(runId: plan.runId),
            log: log, handshakes: o.handshakes)
        let openStarted = ContinuousClock.now
        pool.start()
        let (ready, failed) = await pool.waitForHandshakes(timeout: .seconds(120 + plan.sockets / 50))
        say(String(format: "  %d sockets ready, %d failed in %.1f s", ready, failed, (ContinuousClock.now - openStarted).milliseconds / 1000))
        for (reason, count) in log.socketEvents.errors.sorted(by: { $0.value > $1.value }).prefix(5) { say("  socket error \(count)× \(reason)") }
        guard ready > 0 else {
            await pool.stop()
            throw LoadGenError("no socket could be opened (\(log.socketEvents.errors.keys.sorted().first ?? "no error reported"))")
        }

        try await Task.sleep(for: .seconds(o.idleSeconds))
        let rssIdle = serverPid.flatMap(ProcessStats.rssKiB)
        let ownIdle = ProcessStats.rssKiB(pid: getpid())

        let readySockets = log.socketEvents.readySockets
        let unconfirmed = try await LoadGenProbe(world: world, sink: sink, log: log, concurrency: o.senders).run(
            readySockets: readySockets, timeout: .seconds(120))
        if !unconfirmed.isEmpty {
            say("  WARNING: \(unconfirmed.count) channels never delivered a probe to all their sockets (first: \(unconfirmed.prefix(5)))")
        }
        try await Task.sleep(for: .seconds(1))

        // Expected deliveries count the sockets that were ready when sending started.
        var perChannel = [Int](repeating: 0, count: plan.channels)
        for s in log.socketEvents.readySockets { for c in world.channelsByUser[plan.user(ofSocket: s)] { perChannel[c] += 1 } }
        let measuredWorld = LoadGenWorld(
            plan: plan, users: world.users, channels: world.channels, channelsByUser: world.channelsByUser, socketsPerChannel: perChannel)
        let total = o.rate * o.seconds
        let expected = (0..<total).reduce(0) { $0 + perChannel[$1 % plan.channels] }
        say(
            "\(server): sending \(total) messages at \(o.rate)/s for \(o.seconds) s via \(sink.name) with \(o.senders) workers (\(expected) deliveries expected)"
        )
        let cpuStart = watched.map(\.reading)
        let sendStarted = ContinuousClock.now
        let sends = SendLog(messages: total)
        await OpenLoopSchedule(rate: o.rate, messages: total, workers: o.senders).run(plan: plan, sink: sink, log: sends)
        say(String(format: "  sending done in %.1f s; draining up to %d s", (ContinuousClock.now - sendStarted).milliseconds / 1000, o.drainSeconds))
        let accepted = sends.snapshot.accepted
        let acceptedExpected = (0..<total).reduce(0) { $0 + (accepted[$1] ? perChannel[$1 % plan.channels] : 0) }
        let drainEnd = ContinuousClock.now + .seconds(o.drainSeconds)
        while ContinuousClock.now < drainEnd, log.deliveryCount < acceptedExpected {
            try await Task.sleep(for: .milliseconds(100))
        }
        let measuredSeconds = (ContinuousClock.now - sendStarted).milliseconds / 1000
        let cpuEnd = watched.map(\.reading)
        let rssEnd = serverPid.flatMap(ProcessStats.rssKiB)
        let deliveries = log.allDeliveries
        let events = log.socketEvents
        await pool.stop()

        var report = LoadGenReport()
        report.server = server
        report.protocolName = kind?.rawValue ?? o.proto.rawValue
        report.inject = sink.name
        report.sockets = plan.sockets
        report.socketsReady = ready
        report.socketsFailed = events.failed
        report.socketsUnanswered = max(0, plan.sockets - ready - failed)
        report.socketsDropped = events.droppedAfterReady
        report.channels = plan.channels
        report.members = plan.members
        report.users = plan.users
        report.rate = o.rate
        report.seconds = o.seconds
        report.otherFrames = events.otherMessages
        report.sequenceGaps = events.sequenceGaps
        report.analyse(
            world: measuredWorld, sends: sends.snapshot, deliveries: deliveries, secondHalfFrom: pool.second == nil ? nil : plan.sockets / 2)
        report.gatewayRssBeforeKiB = rssBefore
        report.gatewayRssIdleKiB = rssIdle
        report.gatewayRssEndKiB = rssEnd
        if let rssBefore, let rssIdle { report.gatewayRssPerIdleSocketKiB = Double(rssIdle - rssBefore) / Double(ready) }
        if let ownBefore, let ownIdle { report.loadgenRssPerSocketKiB = Double(ownIdle - ownBefore) / Double(ready) }
        report.measuredSeconds = measuredSeconds
        for (i, process) in watched.enumerated() {
            if let a = cpuStart[i], let b = cpuEnd[i] {
                let usage = b.usage(since: a)
                report.cpuSeconds[process.name] = usage.cpuSeconds
                report.cpuSplit[process.name] = usage
            }
        }
        say(report.summary(failures: sends.snapshot.failures, socketErrors: events.errors))
        if o.json { say(report.jsonLine()) }
        return report
    }
}
