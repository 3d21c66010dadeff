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

    init(_ settings: ServiceSettings) throws {
        creationCost = try settings.int("workspace.creation-cost")
        sagaTimeout = .milliseconds(try settings.int("workspace.saga-timeout-ms"))
        filesDirectory = try settings.string("workspace.files-directory")
        guard creationCost >= 0 else { throw StartupError("workspace.creation-cost must be ≥ 0 (got \(creationCost))") }
        guard sagaTimeout >= .milliseconds(100) else { throw StartupError("workspace.saga-timeout-ms must be ≥ 100") }
    }
}
