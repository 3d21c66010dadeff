import Common
import Foundation
import Logging

/// A PostgreSQL server for the dev stack: created under the data folder with Debian's binaries
/// when none is configured, started on a free port, stopped on exit. When run as root, the
/// server runs as the `postgres` user (initdb refuses root).
struct DevPostgres {
    let dataDirectory: URL
    let port: Int
    let password: String
    let binDirectory: String
    let runAsUser: String?
    /// Whether this launcher started the server (and so stops it).
    private(set) var startedHere = false

    var url: String { "postgres://postgres:\(password)@127.0.0.1:\(port)/postgres" }

    static func locateBinaries() throws -> String {
        if let pgConfig = try? ProcessRunner.output("pg_config", ["--bindir"]), FileManager.default.fileExists(atPath: pgConfig + "/initdb") {
            return pgConfig
        }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted(by: >)
        for v in versions where FileManager.default.fileExists(atPath: "\(root)/\(v)/bin/initdb") {
            return "\(root)/\(v)/bin"
        }
        throw DevError("PostgreSQL server binaries not found: install them with `apt-get install -y postgresql` or pass --database-url")
    }

    static func prepare(root: URL, preferredPort: Int, logger: Logger) throws -> DevPostgres {
        let bin = try locateBinaries()
        let runAs: String? = geteuid() == 0 ? "postgres" : nil
        if let runAs, (try? ProcessRunner.output("id", ["-u", runAs])) == nil {
            throw DevError("running as root, but there is no '\(runAs)' user to run PostgreSQL as (initdb refuses root)")
        }
        let dataDir = root.appendingPathComponent("postgres")
        let passwordFile = root.appendingPathComponent("postgres.password")
        let fm = FileManager.default
        try fm.createDirectory(at: root, withIntermediateDirectories: true)
        var password: String
        if let existing = try? String(contentsOf: passwordFile, encoding: .utf8), !existing.isEmpty {
            password = existing.trimmingCharacters(in: .whitespacesAndNewlines)
        } else {
            password = (0..<24).map { _ in "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789".randomElement().map(String.init) ?? "x" }.joined()
            try password.write(to: passwordFile, atomically: true, encoding: .utf8)
            try fm.setAttributes([.posixPermissions: 0o600], ofItemAtPath: passwordFile.path)
        }
        let pg = DevPostgres(dataDirectory: dataDir, port: preferredPort, password: password, binDirectory: bin, runAsUser: runAs)
        if !fm.fileExists(atPath: dataDir.appendingPathComponent("PG_VERSION").path) {
            logger.info("creating a PostgreSQL cluster", metadata: ["path": "\(dataDir.path)"])
            try fm.createDirectory(at: dataDir, withIntermediateDirectories: true)
            try fm.setAttributes([.posixPermissions: 0o700], ofItemAtPath: dataDir.path)
            let pwfile = root.appendingPathComponent("initdb.pw")
            try password.write(to: pwfile, atomically: true, encoding: .utf8)
            defer { try? fm.removeItem(at: pwfile) }
            if let runAs {
                // The server user must reach the folder and own the cluster and the password file.
                try fm.setAttributes([.posixPermissions: 0o755], ofItemAtPath: root.path)
                try ProcessRunner.run("chown", ["-R", runAs, dataDir.path, pwfile.path])
            }
            try pg.runPostgresTool(
                "initdb",
                [
                    "-D", dataDir.path, "-U", "postgres", "--pwfile", pwfile.path, "--auth", "scram-sha-256",
                    "-E", "UTF8", "--locale", "C.UTF-8", "--no-sync",
                ])
        } else if let runAs {
            try ProcessRunner.run("chown", ["-R", runAs, dataDir.path])
        }
        return pg
    }

    /// Starts the server unless one is already running on this folder; returns the port in use.
    mutating func start(logger: Logger) throws {
        let pidFile = dataDirectory.appendingPathComponent("postmaster.pid")
        if let contents = try? String(contentsOf: pidFile, encoding: .utf8) {
            let lines = contents.split(separator: "\n", omittingEmptySubsequences: false)
            if let pid = lines.first.flatMap({ Int32($0) }), kill(pid, 0) == 0, lines.count > 3, let running = Int(lines[3]) {
                logger.info("reusing the running PostgreSQL", metadata: ["port": "\(running)"])
                self = DevPostgres(dataDirectory: dataDirectory, port: running, password: password, binDirectory: binDirectory, runAsUser: runAsUser)
                return
            }
        }
        let logFile = dataDirectory.deletingLastPathComponent().appendingPathComponent("postgres.log")
        if let runAsUser {
            guard FileManager.default.createFile(atPath: logFile.path, contents: nil) else {
                throw DevError("cannot create \(logFile.path)")
            }
            try ProcessRunner.run("chown", [runAsUser, logFile.path])
        }
        try runPostgresTool(
            "pg_ctl",
            [
                "-D", dataDirectory.path, "-l", logFile.path, "-w", "-t", "60",
                "-o", "-p \(port) -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off -c max_connections=300",
                "start",
            ])
        startedHere = true
    }

    /// Stops the server if this launcher started it.
    func stop() {
        guard startedHere else { return }
        stopServer()
    }

    /// Stops whatever server runs on this folder.
    func stopServer() {
        guard FileManager.default.fileExists(atPath: dataDirectory.appendingPathComponent("postmaster.pid").path) else { return }
        try? runPostgresTool("pg_ctl", ["-D", dataDirectory.path, "-m", "fast", "-w", "stop"])
    }

    private func runPostgresTool(_ tool: String, _ arguments: [String]) throws {
        let path = "\(binDirectory)/\(tool)"
        if let runAsUser {
            try ProcessRunner.run("runuser", ["-u", runAsUser, "--", path] + arguments)
        } else {
            try ProcessRunner.run(path, arguments)
        }
    }
}

struct DevError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs short helper commands to completion (posix_spawn + waitpid, output captured in a file:
/// `pg_ctl start` leaves the server holding inherited descriptors, so a pipe would never end).
enum ProcessRunner {
    @discardableResult
    static func run(_ command: String, _ arguments: [String]) throws -> String {
        let path = command.hasPrefix("/") ? command : "/usr/bin/env"
        let argv = command.hasPrefix("/") ? [command] + arguments : ["env", command] + arguments
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("chatsuite-\(UUID().uuidString).out").path
        defer { unlink(outputPath) }
        let pid = try spawnProcess(path: path, arguments: Array(argv.dropFirst()), environment: ProcessInfo.processInfo.environment, outputPath: outputPath)
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) == -1 && errno == EINTR {}
        let status = exitCode(fromWaitStatus: raw)
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard status == 0 else {
            let last = output.split(separator: "\n").suffix(3).joined(separator: " | ")
            throw DevError("\(command) failed (status \(status)): \(last)")
        }
        return output
    }

    static func output(_ command: String, _ arguments: [String]) throws -> String {
        try run(command, arguments).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
