import Foundation
import ServiceKit

/// Settings of `workspace` beyond the platform's (docs/configuration.md).
struct WorkspaceSettings: Sendable {
    /// Coins a workspace creation costs; 0 skips the coin saga.
    var creationCost: Int
    /// How long a creation request waits for `payment`'s answer before answering E99 (503).
    var sagaTimeout: Duration
    /// Where cover images are stored.
    var filesDirectory: String
    /// The gateway's public prefix of Smooth's `/community-server` (`gateway.smooth.community-prefix`),
    /// in the icon URLs Smooth's answers carry.
    var smoothCommunityPrefix: String

    init(_ settings: ServiceSettings) throws {
        creationCost = try settings.int("workspace.creation-cost")
        sagaTimeout = .milliseconds(try settings.int("workspace.saga-timeout-ms"))
        filesDirectory = try settings.string("workspace.files-directory")
        let prefix = try settings.string("workspace.smooth.community-prefix")
        smoothCommunityPrefix = prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
        guard smoothCommunityPrefix.hasPrefix("/"), smoothCommunityPrefix.count > 1 else {
            throw StartupError("workspace.smooth.community-prefix must be a path such as /community-server, not \(prefix)")
        }
        guard creationCost >= 0 else { throw StartupError("workspace.creation-cost must be ≥ 0 (got \(creationCost))") }
        guard sagaTimeout >= .milliseconds(100) else { throw StartupError("workspace.saga-timeout-ms must be ≥ 100") }
    }
}
