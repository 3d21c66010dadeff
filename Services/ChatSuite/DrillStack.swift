import Database
import Foundation
import LoadGen
import Logging
import PostgresNIO
import Synchronization
import ServiceCatalog

/// The suite the fault drill breaks: its own PostgreSQL, its own embedded broker process, and
/// `chatsuite dev` on top of both (so every service is a child the launcher restarts), with a
/// fake PortOne for payments. Faults: SIGKILL a service (the launcher restarts it), freeze the
/// broker process (SIGSTOP … SIGCONT), restart PostgreSQL.
final class DrillStack: Sendable {
    let gatewayPort: Int
    let servicePorts: [String: Int]
    let sesacKey = "drill-key"
    private let launcher: Process
    private let broker: Process
    private let postgres: Mutex<DevPostgres>
    private let output: URL

    /// The services in the launcher's order.
    static let services = ServiceEntry.all.map(\.name)

    init(dataDir: URL, port: Int, portOneURL: String, logger: Logger) async throws {
        try FileManager.default.createDirectory(at: dataDir, withIntermediateDirectories: true)
        gatewayPort = port
        // As the launcher places them: at their catalog offset from the gateway's port.
        // Where each answers `/health/ready` (the gateway on its admin listener).
        servicePorts = Dictionary(uniqueKeysWithValues: ServiceEntry.all.map { ($0.name, $0.healthPort(httpPort: port + $0.port - ServiceEntry.gatewayPort)) })
        output = dataDir.appendingPathComponent("drill-suite.log")
        guard FileManager.default.createFile(atPath: output.path, contents: nil) else { throw DevError("cannot create \(output.path)") }

        var pg = try DevPostgres.prepare(root: dataDir.appendingPathComponent("postgres"), preferredPort: port + 40, logger: logger)
        try pg.start(logger: logger)
        postgres = Mutex(pg)
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()

        // The broker in a process of its own, so it can be frozen.
        broker = Process()
        broker.executableURL = binary
        broker.arguments = ["broker", "--embedded-brokers", "1"]
        let brokerOut = Pipe()
        broker.standardOutput = brokerOut
        broker.standardError = FileHandle.nullDevice
        try broker.run()
        guard let line = Self.readLine(brokerOut.fileHandleForReading), line.hasPrefix("KAFKA_BROKERS=") else {
            broker.terminate()
            throw DevError("the drill's broker did not start")
        }
        let bootstrap = String(line.dropFirst("KAFKA_BROKERS=".count))

        launcher = Process()
        launcher.executableURL = binary
        launcher.arguments = [
            "dev", "--database-url", pg.url, "--brokers", bootstrap, "--port", String(port), "--sesac-key", sesacKey,
            "--data-dir", dataDir.path, "--portone-url", portOneURL, "--log-level", "warning",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["PAYMENT_PORTONE_API_KEY"] = DrillPortOne.apiKey
        environment["PAYMENT_PORTONE_API_SECRET"] = DrillPortOne.apiSecret
        launcher.environment = environment
        let log = try FileHandle(forWritingTo: output)
        launcher.standardOutput = log
        launcher.standardError = log
        try launcher.run()
    }

    private static func readLine(_ handle: FileHandle) -> String? {
        var data = Data()
        while true {
            let byte = handle.readData(ofLength: 1)
            if byte.isEmpty { return data.isEmpty ? nil : String(decoding: data, as: UTF8.self) }
            if byte.first == 0x0A { return String(decoding: data, as: UTF8.self) }
            data.append(byte)
        }
    }

    /// The suite's log so far (the launcher's prefixed output).
    var log: String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }

    /// The pid of a service, as the launcher's current child of that name.
    func pid(of service: String) -> Int32? {
        let out = (try? ProcessRunner.output("pgrep", ["-x", "-P", String(launcher.processIdentifier), String(service.prefix(15))])) ?? ""
        return out.split(separator: "\n").compactMap { Int32($0.trimmingCharacters(in: .whitespaces)) }.first
    }

    /// Whether the service answers `/health/ready` with 200.
    func isReady(_ service: String) async -> Bool {
        guard let port = servicePorts[service] else { return false }
        return await DevService.isReady(port: port)
    }

    /// Waits until every service is ready; the seconds it took.
    func waitUntilReady(timeout: Duration) async throws -> Double {
        let started = ContinuousClock.now
        while ContinuousClock.now - started < timeout {
            var all = true
            for service in Self.services where !(await isReady(service)) { all = false }
            if all { return (ContinuousClock.now - started).milliseconds / 1000 }
            guard launcher.isRunning else { throw DevError("the launcher stopped:\n\(log.suffix(3000))") }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw DevError("the suite was not ready after \(timeout):\n\(log.suffix(3000))")
    }

    /// Outbox rows not yet published, per service database (a relay that stopped shows here).
    func outboxBacklog(logger: Logger) async -> [String: Int] {
        let url = postgres.withLock { $0.url }
        guard let admin = try? DatabaseConfiguration(url: url) else { return [:] }
        var backlog: [String: Int] = [:]
        for service in ServiceEntry.all {
            guard let database = service.database?.devName else { continue }
            let client = admin.with(database: database).makeClient(logger: logger)
            let count: Int? = await withTaskGroup(of: Int?.self) { group -> Int? in
                group.addTask {
                    await client.run(); return nil
                }
                defer { group.cancelAll() }
                return try? await Self.firstInt(client.query("SELECT count(*)::int FROM outbox WHERE published_at IS NULL").decode(Int.self))
            }
            backlog[service.name] = count ?? -1
        }
        return backlog
    }

    private static func firstInt(_ rows: some AsyncSequence<Int, any Error>) async throws -> Int? {
        for try await value in rows { return value }
        return nil
    }

    // MARK: faults

    func kill(_ service: String) throws {
        guard let pid = pid(of: service) else { throw DevError("no running \(service) under the launcher") }
        Foundation.kill(pid, SIGKILL)
    }

    func freezeBroker() { Foundation.kill(broker.processIdentifier, SIGSTOP) }
    func thawBroker() { Foundation.kill(broker.processIdentifier, SIGCONT) }

    func restartPostgres(logger: Logger) throws {
        try postgres.withLock { pg in
            pg.stopServer()
            try pg.start(logger: logger)
        }
    }

    func stop() async {
        thawBroker()
        launcher.interrupt()
        let deadline = ContinuousClock.now + .seconds(30)
        while launcher.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(100)) }
        if launcher.isRunning { Foundation.kill(launcher.processIdentifier, SIGKILL) }
        broker.interrupt()
        postgres.withLock { $0.stopServer() }
    }
}
