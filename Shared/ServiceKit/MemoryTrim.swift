import Common
import Foundation
import Logging
import Metrics
import ServiceLifecycle

/// Hands the allocator's free pages back to the kernel (glibc's `malloc_trim(0)`): every
/// `memory.trim-interval-seconds`, and once a burst has settled. A burst — 5 000 sockets
/// identifying at once, a presence storm — leaves the heap's high-water mark behind: freed, but
/// holed, so glibc keeps it, and the process's RSS stays at the burst's size until something asks
/// for the pages back (docs/benchmarks.md, parts 15 and 34). A no-op where the C library has no
/// `malloc_trim` (musl).
///
/// The burst watch reads the resident size once a `watchInterval` (`ProcessStats.rssKiB`, one
/// read of /proc/self/status) and trims when it has grown by `memory.trim-after-growth-mib` since the last
/// trim and stopped growing (`TrimPolicy`), so a connect burst's garbage is handed back within
/// about two seconds of its end instead of up to an interval later.
public struct MemoryTrim: Service {
    let interval: Duration?
    let policy: TrimPolicy?
    let watchInterval: Duration
    let logger: Logger
    /// What each trim calls (tests count the trims).
    let trim: @Sendable () -> Bool
    /// The resident size in bytes (tests feed readings); nil when unreadable.
    let resident: @Sendable () -> Int?
    /// Trims done (`memory_trims_total`): shows on every executable's `/metrics` that it trims.
    private let trims = Counter(label: "memory_trims_total")
    /// Of them, those a settled burst set off (`memory_trims_after_growth_total`).
    private let growthTrims = Counter(label: "memory_trims_after_growth_total")

    /// - Parameters:
    ///   - interval: nil: no periodic trim.
    ///   - afterGrowthBytes: nil: no burst watch. With neither, the service only waits for the
    ///     shutdown (one that returned would stop its service group).
    public init(
        interval: Duration?, afterGrowthBytes: Int? = nil, watchInterval: Duration = .seconds(1), logger: Logger,
        trim: @escaping @Sendable () -> Bool = { MallocTrim.run() },
        resident: @escaping @Sendable () -> Int? = { ProcessStats.rssKiB(pid: getpid()).map { $0 * 1024 } }
    ) {
        self.interval = interval
        self.policy = afterGrowthBytes.map { TrimPolicy(growthBytes: $0) }
        self.watchInterval = watchInterval
        self.logger = logger
        self.trim = trim
        self.resident = resident
    }

    public func run() async throws {
        guard interval != nil || policy != nil else {
            try? await gracefulShutdown()
            return
        }
        try? await cancelWhenGracefulShutdown {
            let clock = ContinuousClock()
            var lastTrim = clock.now
            var policy = self.policy
            policy?.trimmed(residentBytes: resident())
            // With a watch, wake once a watch interval; without, once an interval.
            let tick = policy == nil ? (interval ?? watchInterval) : min(watchInterval, interval ?? watchInterval)
            while !Task.isCancelled {
                try await Task.sleep(for: tick)
                let due = interval.map { lastTrim.duration(to: clock.now) >= $0 } ?? false
                let settled = !due && (policy?.shouldTrim(residentBytes: resident()) ?? false)
                guard due || settled else { continue }
                let start = clock.now
                let released = trim()
                lastTrim = clock.now
                policy?.trimmed(residentBytes: resident(), afterGrowth: settled)
                trims.increment()
                if settled { growthTrims.increment() }
                logger.debug(
                    "malloc_trim",
                    metadata: ["released": "\(released)", "after": "\(settled ? "growth" : "interval")", "duration": "\(start.duration(to: lastTrim))"])
            }
        }
    }
}

/// When a burst has settled: the resident size grew since the last trim by at least `growthBytes`
/// and an eighth of the size then, and this reading is no more than `settleBytes` above the
/// previous one (the heap stopped growing, so the burst's garbage is freed and its pages can go
/// back).
///
/// A trim walks the whole heap under the allocator's lock (about 20 ms for 250 000 free blocks in
/// 135 MB here), so growth that is real — a process taking on sockets for good — must not trim
/// again and again for nothing: a settle reading allows a quarter MiB of growth, a larger heap
/// must grow in proportion, and a growth trim that released less than a quarter of the growth
/// doubles the growth the next one waits for (up to 64×; any trim that releases resets it).
///
/// A burst that ends quietly gets one more trim: once the size has held still (within
/// `settleBytes`) for three readings in a row, a growth of half the base threshold since
/// the last trim is enough, whatever the backoff — once per quiet spell. A connect burst trims
/// while it grows, backs off (the sockets' memory is real), and used to leave its last garbage
/// resident until the periodic trim: 127 MB for 30 s after 5 000 native sockets opened, 117 MB
/// after the trim (docs/benchmarks.md, part 42).
public struct TrimPolicy: Sendable {
    public let growthBytes: Int
    public let settleBytes: Int
    /// Still readings in a row after which a burst counts as over (one a second: three seconds).
    static let quietReadings = 3
    /// The resident size just after the last trim.
    private var baseline: Int?
    private var previous: Int?
    /// The growth the next trim waits for, as a multiple of the base threshold.
    private var backoff = 1
    private static let maximumBackoff = 64
    /// Readings in a row within `settleBytes` of the one before.
    private var stillReadings = 0

    public init(growthBytes: Int, settleBytes: Int = 256 << 10) {
        self.growthBytes = growthBytes
        self.settleBytes = settleBytes
    }

    /// The growth since the last trim that the next one waits for, measured from `base`.
    private func threshold(from base: Int) -> Int {
        max(growthBytes, base / 8) * backoff
    }

    /// Whether to trim now, given this reading (nil: unreadable, never).
    public mutating func shouldTrim(residentBytes: Int?) -> Bool {
        guard let current = residentBytes else { return false }
        defer { previous = current }
        stillReadings = previous.map { abs(current - $0) <= settleBytes } == true ? stillReadings + 1 : 0
        guard var base = baseline else {
            baseline = current
            return false
        }
        // Shrunk (memory given back some other way): growth counts from here.
        if current < base {
            base = current
            baseline = current
        }
        guard let previous else { return false }
        let grown = current - base
        if grown >= threshold(from: base), current <= previous + settleBytes { return true }
        // Still for `quietReadings` readings now (not again until the size moves).
        return stillReadings == Self.quietReadings && grown >= max(growthBytes, base / 8) / 2
    }

    /// A trim was done; `residentBytes` is the size after it. `afterGrowth`: this policy asked for
    /// it. Any trim that released a quarter of the growth since the last one resets the backoff
    /// (there was garbage to give back after all: a backoff that only grew would end the watch
    /// for good); only a growth trim that released less doubles it.
    public mutating func trimmed(residentBytes: Int?, afterGrowth: Bool = false) {
        if let after = residentBytes, let before = previous, let base = baseline {
            let releasedEnough = (before - after) * 4 >= max(before - base, 1)
            if releasedEnough {
                backoff = 1
            } else if afterGrowth {
                backoff = min(backoff * 2, Self.maximumBackoff)
            }
        }
        baseline = residentBytes ?? baseline
        previous = residentBytes ?? previous
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
