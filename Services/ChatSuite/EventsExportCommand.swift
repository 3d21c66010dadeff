import ArgumentParser
import EventExport
import Foundation
import Logging

extension EventsCommand {
    /// `chatsuite events export`: topics to NDJSON for analytics (docs/analytics.md).
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write topics' events in a time range as NDJSON, partitioned by topic and hour (docs/analytics.md).",
            discussion: """
                Files: <out>/<topic>/date=YYYY-MM-DD/hour=HH/part-<run id>.ndjson, one whole CloudEvent per line, by the \
                UTC hour of its `time`. Reads without a consumer group, from the offsets at --since up to each partition's \
                end when the export starts. Personal data (e-mail addresses, nicknames, message text, device names, push \
                tokens; see docs/analytics.md) is written as null unless --include-pii.
                """
        )

        @Option(help: "\(BootstrapServers.help) (default: KAFKA_BROKERS from the environment).", transform: BootstrapServers.parse)
        var brokers: String = ProcessInfo.processInfo.environment["KAFKA_BROKERS"] ?? "127.0.0.1:9092"

        @Option(help: "Comma-separated topics, e.g. chat.message.v1,payment.v1 (see `chatsuite events topics`).")
        var topics: String

        @Option(help: "Events at or after this time: 2025-11-20T09:00:00Z, 2025-11-20 (UTC midnight), or a duration before now (30m, 2h, 7d).")
        var since: String

        @Option(help: "Events before this time (same forms as --since); default: everything up to the export's start.")
        var until: String?

        @Option(help: "Directory to write into (created if missing).")
        var out: String

        @Flag(help: "Keep personal data (e-mail addresses, nicknames, message text, device names, push tokens) instead of null.")
        var includePii = false

        @Option(help: "Give up after this many seconds.")
        var timeout: Int = 300

        private func request() throws -> ExportRequest {
            let now = Date()
            let names = topics.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
            do {
                let request = ExportRequest(
                    brokers: brokers, topics: names, since: try ExportTime.parse(since, now: now), until: try until.map { try ExportTime.parse($0, now: now) },
                    outDirectory: URL(fileURLWithPath: out), includePersonalData: includePii, timeout: .seconds(timeout)
                )
                try request.validate()
                return request
            } catch let error as ExportError {
                throw ValidationError(error.description)
            }
        }

        func validate() throws { _ = try request() }

        func run() async throws {
            var logger = Logger(label: "chatsuite.events")
            logger.logLevel = .error
            let request = try request()
            do {
                let summary = try await EventExporter.run(request, logger: logger)
                for topic in request.topics {
                    let files = summary.files.keys.filter { $0.hasPrefix(topic + "/") }.count
                    print("\(topic): \(summary.events[topic] ?? 0) events in \(files) files")
                }
                print(
                    "written to \(request.outDirectory.path); \(summary.redacted) events with personal data nulled"
                        + (request.includePersonalData ? " (--include-pii: none)" : "")
                        + ", \(summary.outOfRange) outside the time range, \(summary.unreadable) not CloudEvents (skipped)")
            } catch let error as ExportError {
                FileHandle.standardError.write(Data("error: \(error.description)\n".utf8))
                throw ExitCode(1)
            }
        }
    }
}
