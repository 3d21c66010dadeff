import ArgumentParser
import Foundation

/// `--brokers` has one meaning in every `chatsuite` command: Kafka bootstrap servers,
/// `host:port[,host:port…]` (what `KAFKA_BROKERS` holds). The size of an embedded cluster is
/// `--embedded-brokers`.
enum BootstrapServers {
    static let help = "Kafka bootstrap servers, host:port[,host:port…]"

    /// The list, entries trimmed; rejects an empty entry and a bare number (before
    /// `--embedded-brokers` existed, `chatsuite dev --brokers 3` meant three embedded brokers).
    static func parse(_ argument: String) throws -> String {
        let entries = argument.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        for entry in entries {
            guard !entry.isEmpty else { throw ValidationError("expected \(help), got an empty entry") }
            guard !entry.allSatisfy(\.isNumber) else {
                throw ValidationError("expected \(help); the number of embedded brokers is --embedded-brokers")
            }
        }
        return entries.joined(separator: ",")
    }
}
