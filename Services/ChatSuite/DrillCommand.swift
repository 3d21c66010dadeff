import ArgumentParser
import Foundation
import LoadGen
import Logging
import NIOCore
import NIOHTTP1
import Synchronization

/// `chatsuite drill`: starts a suite of its own (PostgreSQL, a broker process, `chatsuite dev`
/// on both, a fake PortOne), runs steady traffic — REST sends, coin purchases, native sockets
/// that resume — and breaks one part at a time: SIGKILL of a service (the launcher restarts it),
/// the broker frozen for 10 s, PostgreSQL restarted. Prints what every fault cost (docs/benchmarks.md).
struct DrillCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "drill", abstract: "Fault drill: kill parts of a running suite under traffic and report.")

    @Flag(help: "One fault of each kind (a service killed, the broker frozen, PostgreSQL restarted), as CI runs it.")
    var short = false

    @Option(help: "Gateway port of the drill's suite (the services use the next ports).")
    var port: Int = 8380

    @Option(help: "Folder for the drill's PostgreSQL and files (ignored by git).")
    var dataDir: String = ".devdata/drill"

    @Option(help: "REST messages per second.")
    var rate: Double = 10

    @Option(help: "Seconds of steady traffic after each recovery.")
    var settle: Int = 8

    @Option(help: "Write the report (markdown) here as well.")
    var report: String?

    @Option(help: "Only these faults, comma-separated: a service name (killed), broker, postgres.")
    var only: String?

    enum Fault: Sendable, CustomStringConvertible {
        case kill(String)
        case freezeBroker(Duration)
        case restartPostgres

        var description: String {
            switch self {
            case .kill(let service): "kill -9 \(service)"
            case .freezeBroker(let duration): "broker stopped \(Int(duration.milliseconds / 1000)) s"
            case .restartPostgres: "PostgreSQL restarted"
            }
        }
    }

    var faults: [Fault] {
        if let only {
            return only.split(separator: ",").map { name in
                switch name {
                case "broker": .freezeBroker(.seconds(10))
                case "postgres": .restartPostgres
                default: .kill(String(name))
                }
            }
        }
        if short { return [.kill("gateway"), .freezeBroker(.seconds(10)), .restartPostgres] }
        return ["gateway", "chat", "chat-fanout", "workspace", "auth", "payment"].map(Fault.kill) + [.freezeBroker(.seconds(10)), .restartPostgres]
    }

    func run() async throws {
        var logger = Logger(label: "chatsuite.drill")
        logger.logLevel = .warning
        let root = URL(fileURLWithPath: dataDir, isDirectory: true).standardizedFileURL
        let portOne = DrillPortOne()
        let portOnePort = port + 30
        let portOneTask = Task { try await portOne.run(port: portOnePort) }
        defer { portOneTask.cancel() }

        say("drill: starting a suite under \(root.path) (gateway port \(port))")
        let stack = try await DrillStack(dataDir: root, port: port, portOneURL: "http://127.0.0.1:\(portOnePort)", logger: logger)
        do {
            let seconds = try await stack.waitUntilReady(timeout: .seconds(180))
            say(String(format: "drill: suite ready in %.1f s", seconds))
            let rows = try await drive(stack, portOne: portOne, logger: logger)
            let text = DrillReport.markdown(rows.phases, totals: rows.totals, command: "chatsuite drill\(short ? " --short" : "") --rate \(Int(rate))")
            print(text)
            if let report { try text.write(toFile: report, atomically: true, encoding: .utf8) }
            await stack.stop()
            if !rows.totals.passed { throw ExitCode(1) }
        } catch {
            await stack.stop()
            throw error
        }
    }

    private func drive(_ stack: DrillStack, portOne: DrillPortOne, logger: Logger) async throws -> (phases: [DrillReport.Phase], totals: DrillReport.Totals) {
        let client = GatewayClient(base: "http://127.0.0.1:\(stack.gatewayPort)", sesacKey: stack.sesacKey)
        let traffic = try await DrillTraffic.setUp(client: client, portOne: portOne, gatewayPort: stack.gatewayPort, userCount: 4, channelCount: 2)
        say("drill: \(traffic.users.count) users, \(traffic.channels.count) channels; native sockets connecting")
        let socketTasks = traffic.sockets.enumerated().map { index, socket in
            Task { await socket.run(token: { traffic.token(index) }) }
        }
        try await waitFor("native sockets ready", timeout: .seconds(60)) { traffic.sockets.allSatisfy { $0.state.withLock { $0.sessionId != nil } } }
        let sender = Task { await traffic.sendMessages(rate: rate) }
        let buyer = Task { await traffic.buyCoins(every: .milliseconds(700)) }
        let refresher = Task {
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(240))
                await traffic.refreshTokens()
            }
        }
        try await Task.sleep(for: .seconds(settle))

        var phases: [DrillReport.Phase] = []
        for fault in faults {
            say("drill: \(fault)")
            let started = ContinuousClock.now
            switch fault {
            case .kill(let service):
                let before = stack.pid(of: service)
                try stack.kill(service)
                try await waitFor("\(service) restarted", timeout: .seconds(120)) {
                    guard let now = stack.pid(of: service), now != before else { return false }
                    return await stack.isReady(service)
                }
            case .freezeBroker(let duration):
                stack.freezeBroker()
                try await Task.sleep(for: duration)
                stack.thawBroker()
            case .restartPostgres:
                try stack.restartPostgres(logger: logger)
            }
            // Recovered: every service ready and five messages in a row accepted again (one
            // answer can come from the one pooled connection that is already back).
            var streak = 0
            try await waitFor("recovery after \(fault)", timeout: .seconds(180)) {
                for service in DrillStack.services where !(await stack.isReady(service)) { return false }
                let (status, _) =
                    (try? await client.send(
                        .POST, "/v1/workspaces/\(traffic.workspace)/channels/\(traffic.channels[0])/chats",
                        token: traffic.token(0), json: #"{"content":"drill probe"}"#)) ?? (.serviceUnavailable, .init())
                streak = status == .ok ? streak + 1 : 0
                return streak >= 5
            }
            let recovered = ContinuousClock.now
            phases.append(DrillReport.Phase(fault: fault.description, started: started, recovered: recovered))
            try await Task.sleep(for: .seconds(settle))
        }

        traffic.stop()
        refresher.cancel()
        _ = await sender.value
        _ = await buyer.value
        // Deliveries in flight arrive; then the sockets stop.
        try await Task.sleep(for: .seconds(5))
        let stored = try await traffic.storedMessageIds()
        for task in socketTasks { task.cancel() }
        let coins = await traffic.coinCheck()
        let backlog = await stack.outboxBacklog(logger: logger)
        let totals = DrillReport.Totals(
            sends: traffic.sendOutcomes, payments: traffic.paymentResults, accepted: traffic.acceptedMessageIds, stored: stored,
            sockets: traffic.sockets.map { $0.state.withLock { $0 } }, coins: coins, phases: phases, outboxBacklog: backlog
        )
        return (DrillReport.attribute(traffic.sendOutcomes, traffic.paymentResults, to: phases), totals)
    }

    private func waitFor(_ what: String, timeout: Duration, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw LoadGenError("drill: \(what) did not happen within \(timeout)")
    }
}
