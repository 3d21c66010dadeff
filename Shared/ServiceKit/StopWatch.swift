import Logging
import ServiceLifecycle

/// A service that reports, at warning level, how long it keeps running once graceful shutdown
/// began: every `interval` until it returns. A launcher gives a process a bounded grace before
/// killing it (`chatsuite dev`: 15 s; Docker: 10 s), so a part that does not stop leaves its name
/// in the log even where only warnings are kept.
struct StopWatch: Service {
    let base: any Service
    let name: String
    let logger: Logger
    var interval: Duration = .seconds(3)

    init(_ base: any Service, name: String? = nil, logger: Logger) {
        self.base = base
        self.name = name ?? String(describing: type(of: base))
        self.logger = logger
    }

    func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await base.run() }
            group.addTask {
                // Returns when graceful shutdown begins; throws when the task is cancelled (the
                // service ended first).
                try await gracefulShutdown()
                let began = ContinuousClock.now
                while true {
                    try await Task.sleep(for: interval)
                    let seconds = (ContinuousClock.now - began).components.seconds
                    logger.warning("still stopping", metadata: ["part": "\(name)", "seconds": "\(seconds)"])
                }
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }
}
