import ArgumentParser
import Common
import LoadGen

/// `chatsuite loadgen`: the real-time load generator (the `LoadGen` library) against a running
/// suite (`chatsuite dev`). docs/benchmarks.md, "Real-time load generator".
struct LoadGenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "loadgen", abstract: "Real-time load generator: sockets, message fan-out, delivery latency.")

    typealias Inject = LoadGenOptions.Inject

    @Option(help: "Gateway base URL.") var gateway = "http://127.0.0.1:8080"
    @Option(help: "SesacKey header value.") var sesacKey = "dev-key"
    @Option(help: "Channels.") var channels = 500
    @Option(help: "Members per channel.") var members = 10
    @Option(help: "Users (default channels × members; fewer are reused round-robin across channels).") var users: Int?
    @Option(help: "Sockets (default channels × members); socket s belongs to user s mod users and follows all of its channels.") var sockets: Int?
    @Option(
        name: .customLong("protocol"),
        help: "socketio, socketio-upgrade (polling, then the upgrade, as the SeSAC apps), native, stomp, or mixed (even Socket.IO, odd native)."
    ) var proto: LoadGenProtocol = .socketio
    @Option(help: "STOMP: ask the server for a heart-beat every this many ms (heart-beat:0,N); 0 asks for none.")
    var stompHeartBeat = 0
    @Option(help: "STOMP: send the server a heart-beat (an EOL) every this many ms (heart-beat:N,…); 0 sends none.")
    var stompClientHeartBeat = 0
    @Option(help: "Channels per workspace (one workspace per this many channels).") var channelsPerWorkspace = 100
    @Option(help: "Messages per second (open loop).") var rate = 1000
    @Option(help: "Seconds of sending.") var seconds = 30
    @Option(help: "Concurrent send workers.") var senders = 64
    @Option(help: "Seconds to wait for outstanding deliveries after the last send.") var drainSeconds = 5
    @Option(help: "rest (POST …/chats through the gateway) or kafka (produce chat.message.v1 events directly; needs --brokers).") var inject: Inject = .rest
    @Option(help: "\(BootstrapServers.help), for --inject kafka (chatsuite dev prints them).", transform: BootstrapServers.parse)
    var brokers: String?
    @Option(help: "Compression codec of the --inject kafka producer, as chat's would use (kafka.compression; chatsuite dev sets none).")
    var kafkaCompression = "lz4"
    @Option(help: "Gateway process id: its RSS is sampled before the sockets open, when they are open and idle, and at the end.") var gatewayPid: Int32?
    @Option(
        help:
            "A second gateway's base URL: the second half of the sockets connect to it (an A/B of two builds in one run, bench/gateway-pair.sh; with --sockets twice the plan's, each half gets the whole topology)."
    )
    var secondGateway: String?
    @Option(
        help: "name=pid of a process whose CPU time (with its direct children's) over the send phase is reported (repeatable), e.g. postgres=<postmaster pid>.")
    var watch: [String] = []
    @Option(help: "REST requests in flight during setup.") var setupConcurrency = 16
    @Option(help: "WebSocket handshakes in flight.") var handshakes = 64
    @Option(help: "Seconds the open sockets stay idle before the idle RSS sample.") var idleSeconds = 5
    @Flag(help: "Also print the figures as one JSON line.") var json = false
    @Option(help: "name=pid of a process whose own CPU time (without its children) is reported (repeatable), e.g. broker=<chatsuite dev pid>.")
    var watchAlone: [String] = []
    @Option(help: "A peer server driven with the same plan after the suite, for a side-by-side table: nchan (nginx + nchan, bench/peers/nchan.conf).")
    var peer: LoadGenPeer?
    @Flag(help: "Run only the peer (no suite run).") var peerOnly = false
    @Option(help: "The peer's nginx configuration template.") var peerConfig = "bench/peers/nchan.conf"
    @Option(help: "nginx worker processes for the peer (1: nchan's best case; 2: both cores, as the gateway's default).")
    var peerWorkers = 1
    @Option(help: "Port the peer listens on.") var peerPort = 18990
    @Option(help: "The nginx executable.") var nginx = "/usr/sbin/nginx"
    @Option(help: "File keeping setup's accounts and channels: reused when it exists (same suite and plan), written after setup otherwise.")
    var world: String?

    var options: LoadGenOptions {
        var o = LoadGenOptions()
        o.gateway = gateway
        o.sesacKey = sesacKey
        o.channels = channels
        o.members = members
        o.users = users
        o.sockets = sockets
        o.proto = proto
        o.stompHeartBeat = stompHeartBeat
        o.stompClientHeartBeat = stompClientHeartBeat
        o.channelsPerWorkspace = channelsPerWorkspace
        o.rate = rate
        o.seconds = seconds
        o.senders = senders
        o.drainSeconds = drainSeconds
        o.inject = inject
        o.brokers = brokers
        o.kafkaCompression = kafkaCompression
        o.gatewayPid = gatewayPid
        o.secondGateway = secondGateway
        o.watch = watch
        o.setupConcurrency = setupConcurrency
        o.handshakes = handshakes
        o.idleSeconds = idleSeconds
        o.json = json
        o.watchAlone = watchAlone
        o.peer = peer
        o.peerOnly = peerOnly
        o.peerConfig = peerConfig
        o.peerWorkers = peerWorkers
        o.peerPort = peerPort
        o.nginx = nginx
        o.world = world
        return o
    }

    func validate() throws {
        guard stompHeartBeat >= 0, stompClientHeartBeat >= 0 else {
            throw ValidationError("--stomp-heart-beat and --stomp-client-heart-beat must be 0 or more")
        }
        guard (1...64).contains(peerWorkers) else { throw ValidationError("--peer-workers must be 1 to 64") }
    }

    func run() async throws {
        let generator: LoadGenerator
        do {
            generator = try LoadGenerator(options, fileLimit: ProcessStats.raiseFileLimit())
        } catch let error as LoadGenUsageError {
            throw ValidationError(error.description)
        }
        try await generator.run()
    }
}

// The library stays free of ArgumentParser; its two option types are read from the command line here.
extension LoadGenProtocol: ExpressibleByArgument {}
extension LoadGenOptions.Inject: ExpressibleByArgument {}
extension LoadGenPeer: ExpressibleByArgument {}
