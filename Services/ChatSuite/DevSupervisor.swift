import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// One executable the launcher runs, with everything needed to start it again.
struct DevService: Sendable {
    let name: String
    let executable: URL
    let port: Int
    /// Where it answers `/health/ready` (the gateway: its admin listener).
    let healthPort: Int
    let environment: [String: String]
    let color: Int

    func start(output: ConsoleWriter, events: AsyncStream<DevEvent>.Continuation) throws -> ChildProcess {
        try ChildProcess(name: name, executable: executable, port: port, environment: environment, color: color, output: output) { pid, status in
            events.yield(.exited(name: name, pid: pid, status: status))
        }
    }

    /// Polls `GET /health/ready` every 200 ms until it answers 200 (true) or `timeout` passes.
    func waitUntilReady(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, !Task.isCancelled {
            if await Self.isReady(port: healthPort) { return true }
            try? await Task.sleep(for: .milliseconds(200))
        }
        return false
    }

    /// Whether the service on `port` answers `GET /health/ready` with 200 now.
    static func isReady(port: Int) async -> Bool {
        guard let response = try? await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/health/ready"), timeout: .seconds(2)) else {
            return false
        }
        _ = try? await response.body.collect(upTo: 1 << 20)
        return response.status == .ok
    }
}

/// What the launcher reacts to while the suite runs.
enum DevEvent: Sendable {
    case signal(Int32)
    /// A child process ended (`status`: exit code, or 128 + signal number).
    case exited(name: String, pid: Int32, status: Int32)
    /// A service answered `/health/ready` with 200 (at start, or after a restart).
    case ready(name: String)
    case allReady
    case notReady(String)
    case restartDue(name: String)
}

/// Keeps the suite running like compose's `restart: unless-stopped`: a service that exits after
/// it was ready once is started again after a back-off (`RestartBackoff`); one that exits before
/// it ever was ready is a start-up failure and stops the suite (a wrong setting must not loop).
/// A signal stops everything, and nothing is restarted from then on.
struct DevSupervisor {
    let services: [DevService]
    let console: ConsoleWriter
    let events: AsyncStream<DevEvent>.Continuation
    let readyTimeout: Duration
    private(set) var children: [String: ChildProcess] = [:]
    private var everReady: Set<String> = []
    private var backoff: [String: RestartBackoff] = [:]
    private var pending: [Task<Void, Never>] = []

    init(services: [DevService], console: ConsoleWriter, events: AsyncStream<DevEvent>.Continuation, readyTimeout: Duration) {
        self.services = services
        self.console = console
        self.events = events
        self.readyTimeout = readyTimeout
    }

    /// The running children in start order.
    var running: [ChildProcess] { services.compactMap { children[$0.name] } }

    mutating func startAll() throws {
        for service in services {
            children[service.name] = try service.start(output: console, events: events)
        }
    }

    /// Handles events until a signal (nil) or a failure (its message).
    /// - Parameter onAllReady: called once every service reported ready.
    mutating func supervise(_ stream: AsyncStream<DevEvent>, onAllReady: () -> Void) async -> String? {
        for await event in stream {
            switch event {
            case .signal(let number):
                console.write("received signal \(number)")
                return nil
            case .allReady:
                onAllReady()
            case .notReady(let message):
                return message
            case .ready(let name):
                if everReady.contains(name) { console.write("\(name) is ready again") }
                everReady.insert(name)
            case .exited(let name, let pid, let status):
                guard let child = children[name], child.pid == pid else { continue }
                guard everReady.contains(name) else { return "\(name) \(status) stopped unexpectedly (before it was ready)" }
                scheduleRestart(name, after: child, status: status)
            case .restartDue(let name):
                guard let service = services.first(where: { $0.name == name }) else { continue }
                do {
                    let child = try service.start(output: console, events: events)
                    children[name] = child
                    console.write("restarted \(name) (pid \(child.pid))")
                    watchReadiness(service)
                } catch {
                    return "cannot restart \(name): \(error)"
                }
            }
        }
        return nil
    }

    private mutating func scheduleRestart(_ name: String, after child: ChildProcess, status: Int32) {
        var policy = backoff[name] ?? RestartBackoff()
        let delay = policy.delay(afterRunOf: ContinuousClock.now - child.startedAt)
        backoff[name] = policy
        console.write("restart \(name) after exit \(status) (attempt \(policy.attempt), in \(Self.seconds(delay)) s)")
        let events = self.events
        pending.append(
            Task {
                guard (try? await Task.sleep(for: delay)) != nil else { return }
                events.yield(.restartDue(name: name))
            })
    }

    private mutating func watchReadiness(_ service: DevService) {
        let events = self.events
        let timeout = readyTimeout
        pending.append(
            Task {
                if await service.waitUntilReady(timeout: timeout) { events.yield(.ready(name: service.name)) }
            })
    }

    /// Ends pending restarts and readiness polls; then SIGTERM to every child in reverse start
    /// order, `grace` to finish, SIGKILL for the rest.
    func stopAll(grace: Duration = .seconds(15)) async {
        pending.forEach { $0.cancel() }
        let children = running
        for child in children.reversed() { child.signal(SIGTERM) }
        let deadline = ContinuousClock.now + grace
        while children.contains(where: \.isRunning), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(50))
        }
        for child in children where child.isRunning {
            console.write("\(child.name) did not stop in time; killing it")
            child.signal(SIGKILL)
        }
    }

    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.1f", Double(seconds) + Double(attoseconds) / 1e18)
    }
}
