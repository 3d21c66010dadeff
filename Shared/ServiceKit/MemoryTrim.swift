import Foundation
import Logging
import Metrics
import ServiceLifecycle

/// Hands the allocator's free pages back to the kernel every `memory.trim-interval-seconds`
/// (glibc's `malloc_trim(0)`). A burst — 5 000 sockets identifying at once, a presence storm —
/// leaves the heap's high-water mark behind: freed, but holed, so glibc keeps it, and the
/// process's RSS stays at the burst's size until something asks for the pages back
/// (docs/benchmarks.md, part 15). A no-op where the C library has no `malloc_trim` (musl).
public struct MemoryTrim: Service {
    let interval: Duration?
    let logger: Logger
    /// What each tick calls (tests count the ticks).
    let trim: @Sendable () -> Bool
    /// Trims done (`memory_trims_total`): shows on every executable's `/metrics` that it trims.
    private let trims = Counter(label: "memory_trims_total")

    /// - Parameter interval: nil: never (the service then only waits for the shutdown: one that
    ///   returned would stop its service group).
    public init(interval: Duration?, logger: Logger, trim: @escaping @Sendable () -> Bool = { MallocTrim.run() }) {
        self.interval = interval
        self.logger = logger
        self.trim = trim
    }

    public func run() async throws {
        guard let interval else {
            try? await gracefulShutdown()
            return
        }
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                let clock = ContinuousClock()
                let start = clock.now
                let released = trim()
                trims.increment()
                logger.debug("malloc_trim", metadata: ["released": "\(released)", "duration": "\(start.duration(to: clock.now))"])
            }
        }
    }
}

/// glibc's `malloc_trim`, looked up at run time (Swift's Glibc module does not export it, and
/// other C libraries lack it).
public enum MallocTrim {
    private typealias Function = @convention(c) (Int) -> Int32

    /// Whether this process's C library has `malloc_trim`.
    public static var isAvailable: Bool { symbol != nil }

    /// Releases free heap memory to the kernel; true when some was released.
    @discardableResult
    public static func run() -> Bool {
        guard let symbol else { return false }
        return unsafeBitCast(symbol, to: Function.self)(0) == 1
    }

    /// `RTLD_DEFAULT` (a null handle on glibc): the symbol wherever the process has it.
    private static var symbol: UnsafeMutableRawPointer? { dlsym(nil, "malloc_trim") }
}
