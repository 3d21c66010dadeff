import ArgumentParser
import Foundation
import Logging

/// `chatsuite postgres start|stop`: the dev stack's local PostgreSQL on its own, e.g. for the
/// test suite (`scripts/test.sh`). `start` prints `DATABASE_URL=…` and leaves the server running.
struct PostgresCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "postgres", abstract: "Create/start or stop a local PostgreSQL server under a data folder.",
        subcommands: [Start.self, Stop.self]
    )

    struct Options: ParsableArguments {
        @Option(help: "Folder for the cluster and its password (ignored by git).")
        var dataDir: String = ".devdata"

        @Option(help: "Port to listen on (127.0.0.1 only).")
        var port: Int = 54329

        func cluster() throws -> (DevPostgres, Logger) {
            var logger = Logger(label: "chatsuite.postgres")
            logger.logLevel = .warning
            let root = URL(fileURLWithPath: dataDir, isDirectory: true).standardizedFileURL
            return (try DevPostgres.prepare(root: root, preferredPort: port, logger: logger), logger)
        }
    }

    struct Start: AsyncParsableCommand {
        @OptionGroup var options: Options

        func run() async throws {
            var (pg, logger) = try options.cluster()
            try pg.start(logger: logger)
            emit("DATABASE_URL=\(pg.url)")
        }
    }

    struct Stop: AsyncParsableCommand {
        @OptionGroup var options: Options

        func run() async throws {
            try options.cluster().0.stopServer()
        }
    }
}
