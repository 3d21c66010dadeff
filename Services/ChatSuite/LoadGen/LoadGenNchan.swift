import AsyncHTTPClient
import Common
import Events
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

// The C peer of `chatsuite loadgen --peer nchan`: nginx + nchan (bench/peers/nchan.conf) driven
// with the suite's plan — the same sockets, channels, members, rate and receive path — so the
// ratio of the two comes out of one command. docs/benchmarks.md, "The C peer".

/// A running nginx with the nchan module, started from the repository's configuration template
/// in a scratch prefix of its own.
final class NchanPeer: Sendable {
    let base: String
    /// The master's pid; its CPU is watched with its children (the workers).
    let pid: Int32
    let workers: [Int32]
    private let process: Mutex<Process>
    let prefix: String

    private init(base: String, process: sending Process, prefix: String) {
        self.base = base
        self.pid = process.processIdentifier
        self.workers = ProcessStats.children(of: process.processIdentifier)
        self.process = Mutex(process)
        self.prefix = prefix
    }

    /// The configuration `template` for one run: its `@PORT@`, `@PREFIX@` and `@WORKERS@` filled
    /// in. A template that does not name its worker count can only be run with one worker.
    static func configuration(template: String, port: Int, prefix: String, workers: Int) throws -> String {
        guard (1...64).contains(workers) else { throw LoadGenError("--peer-workers must be 1 to 64, not \(workers)") }
        guard template.contains("@WORKERS@") || workers == 1 else {
            throw LoadGenError("the nchan configuration has no @WORKERS@ (its worker_processes), so --peer-workers \(workers) cannot apply")
        }
        return template.replacingOccurrences(of: "@PORT@", with: String(port)).replacingOccurrences(of: "@PREFIX@", with: prefix)
            .replacingOccurrences(of: "@WORKERS@", with: String(workers))
    }

    static func start(nginx: String, config: String, port: Int, workers: Int, http: HTTPClient) async throws -> NchanPeer {
        guard FileManager.default.isExecutableFile(atPath: nginx) else {
            throw LoadGenError("\(nginx) not found: install Debian's nginx-light and libnginx-mod-nchan (or pass --nginx)")
        }
        guard let template = try? String(contentsOfFile: config, encoding: .utf8) else {
            throw LoadGenError("cannot read the nchan configuration \(config) (run from the repository root, or pass --peer-config)")
        }
        let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("loadgen-nchan-\(UUID().uuidString.prefix(8))").path
        let text = try configuration(template: template, port: port, prefix: prefix, workers: workers)
        try FileManager.default.createDirectory(atPath: prefix + "/tmp", withIntermediateDirectories: true)
        try text.write(toFile: prefix + "/nginx.conf", atomically: true, encoding: .utf8)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-p", prefix, "-c", prefix + "/nginx.conf", "-e", prefix + "/error.log"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let base = "http://127.0.0.1:\(port)"
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            guard process.isRunning else {
                let log = (try? String(contentsOfFile: prefix + "/error.log", encoding: .utf8)) ?? ""
                throw LoadGenError("nginx exited at start (\(process.terminationStatus)): \(log.suffix(600))")
            }
            var request = HTTPClientRequest(url: base + "/health")
            request.method = .GET
            if let response = try? await http.execute(request, timeout: .seconds(1)), response.status == .ok {
                _ = try? await response.body.collect(upTo: 1024)
                return NchanPeer(base: base, process: process, prefix: prefix)
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        process.terminate()
        throw LoadGenError("nginx did not answer \(base)/health within 10 s (port \(port) taken? see \(prefix)/error.log)")
    }

    /// SIGTERM (nginx's fast shutdown), then waits for the master to exit.
    func stop() async {
        process.withLock { if $0.isRunning { $0.terminate() } }
        let deadline = ContinuousClock.now + .seconds(10)
        while process.withLock({ $0.isRunning }), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        try? FileManager.default.removeItem(atPath: prefix)
    }
}

/// Publishes with `POST /pub/<channel>` the message's event data as the suite encodes it
/// (`chat.channel-message.created`: the fields the gateway renders a chat from, about the same
/// size), so both servers move comparable bytes per delivery; nchan hands the body to every
/// subscriber of the channel as one text frame.
struct NchanSink: MessageSink {
    let http: HTTPClient
    let base: String
    let world: LoadGenWorld
    var name: String { "http-publish" }

    func send(channel: Int, sender: Int, content: String) async -> String? {
        var request = HTTPClientRequest(url: "\(base)/pub/\(world.channels[channel].id)")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        do {
            let body = try EventCoding.encoder().encode(world.message(channel: channel, sender: sender, content: content))
            request.body = .bytes(ByteBuffer(bytes: body))
            let response = try await http.execute(request, timeout: .seconds(30))
            _ = try await response.body.collect(upTo: 1 << 16)
            // 201: delivered to subscribers; 202: queued (no subscriber at that moment).
            return response.status == .created || response.status == .accepted ? nil : "HTTP \(response.status.code)"
        } catch {
            return "\(error)"
        }
    }
}

extension LoadGenWorld {
    /// The plan with made-up ids and no accounts: what a peer without users or workspaces needs
    /// (channel ids name nchan channels).
    init(peerOf plan: LoadGenPlan) {
        let workspace = WorkspaceID.generate()
        self.init(
            plan: plan,
            users: (0..<plan.users).map { LoadGenUser(id: .generate(), email: "peer\($0)@loadgen", nickname: "peer\($0)", token: "", expires: nil) },
            channels: (0..<plan.channels).map { LoadGenChannel(workspaceId: workspace, id: .generate(), name: "c\($0)") },
            channelsByUser: plan.channelsByUser(), socketsPerChannel: plan.socketsPerChannel())
    }
}

/// The servers of one run side by side: deliveries per server CPU-second, latency, memory.
struct LoadGenComparison {
    let reports: [LoadGenReport]

    /// Server CPU of a report: every watched process but the load generator and PostgreSQL.
    static func serverCPU(_ r: LoadGenReport) -> Double {
        r.cpuSeconds.filter { $0.key != "loadgen" && $0.key != "postgres" }.values.reduce(0, +)
    }

    /// The user and system time of a report's server processes (as `serverCPU` counts them).
    static func serverSplit(_ r: LoadGenReport) -> ProcessStats.Usage? {
        let servers = r.cpuSplit.filter { $0.key != "loadgen" && $0.key != "postgres" }.values
        guard !servers.isEmpty else { return nil }
        return servers.reduce(.zero, +)
    }

    func table() -> String {
        func f(_ v: Double, _ d: Int = 1) -> String { String(format: "%.\(d)f", v) }
        var lines = ["──── side by side ──────────────────────────────────────────────"]
        lines.append("server (CPU counted)                       deliveries  CPU s  deliveries/CPU-s  p50 ms  p99 ms  KiB/idle socket")
        var rows: [(String, Double)] = []
        for r in reports {
            var sets: [(String, Double)] = []
            if r.server == "chatsuite" {
                if let g = r.cpuSeconds["gateway"] {
                    sets.append(("chatsuite gateway", g))
                    if let f = r.cpuSeconds["chat-fanout"] { sets.append(("chatsuite gateway+chat-fanout", g + f)) }
                }
                let all = Self.serverCPU(r)
                let names = r.cpuSeconds.keys.filter { $0 != "loadgen" && $0 != "postgres" }.sorted()
                if names.count > 1, !(names.count == 2 && names.contains("chat-fanout")) {
                    sets.append(("chatsuite " + names.joined(separator: "+"), all))
                }
            } else {
                sets.append((r.server, Self.serverCPU(r)))
            }
            for (label, cpu) in sets {
                let perCPU = cpu > 0 ? Double(r.received) / cpu : 0
                rows.append((label, perCPU))
                lines.append(
                    label.padding(toLength: 42, withPad: " ", startingAt: 0) + " "
                        + "\(r.received)".leftPadded(10) + " " + f(cpu, 2).leftPadded(6) + " " + f(perCPU, 0).leftPadded(17) + " "
                        + f(r.latencyP50Ms, 2).leftPadded(7) + " " + f(r.latencyP99Ms, 2).leftPadded(7) + " "
                        + (r.gatewayRssPerIdleSocketKiB.map { f($0, 2) } ?? "–").leftPadded(16))
            }
            if r.lost > 0 || r.duplicated > 0 || r.socketsFailed > 0 || r.socketsUnanswered > 0 {
                lines.append(
                    "  \(r.server): lost \(r.lost), duplicated \(r.duplicated), sockets failed \(r.socketsFailed), never answered \(r.socketsUnanswered)")
            }
        }
        if let peer = rows.last(where: { !$0.0.hasPrefix("chatsuite") }), peer.1 > 0 {
            for row in rows where row.0.hasPrefix("chatsuite") {
                lines.append("\(row.0): \(f(row.1 / peer.1, 2))× \(peer.0)'s deliveries per CPU-second")
            }
        }
        // Each server's CPU per delivery, split into user and system time: which side a gap is on.
        let perDelivery = reports.compactMap { r -> String? in
            let split = r.server == "chatsuite" ? r.cpuSplit["gateway"].map { ("chatsuite gateway", $0) } : Self.serverSplit(r).map { (r.server, $0) }
            guard let (label, usage) = split, r.received > 0 else { return nil }
            let micro = 1_000_000 / Double(r.received)
            return "\(label) \(f(usage.userSeconds * micro, 2)) µs user + \(f(usage.systemSeconds * micro, 2)) µs system"
        }
        if !perDelivery.isEmpty { lines.append("CPU per delivery: " + perDelivery.joined(separator: "; ")) }
        lines.append("────────────────────────────────────────────────────────────────")
        return lines.joined(separator: "\n")
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
