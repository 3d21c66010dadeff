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
/// The burst watch reads the resident size once a `watchInterval` (one read of
/// /proc/self/statm) and trims when it has grown by `memory.trim-after-growth-mib` since the last
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
        resident: @escaping @Sendable () -> Int? = { ResidentSize.bytes() }
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
/// must grow in proportion, and a trim that released less than a quarter of the growth doubles the
/// growth the next one waits for (up to 64×; a trim that releases resets it).
public struct TrimPolicy: Sendable {
    public let growthBytes: Int
    public let settleBytes: Int
    /// The resident size just after the last trim.
    private var baseline: Int?
    private var previous: Int?
    /// The growth the next trim waits for, as a multiple of the base threshold.
    private var backoff = 1
    private static let maximumBackoff = 64

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
        guard var base = baseline else {
            baseline = current
            return false
        }
        // Shrunk (memory given back some other way): growth counts from here.
        if current < base {
            base = current
            baseline = current
        }
        guard current - base >= threshold(from: base), let previous else { return false }
        return current <= previous + settleBytes
    }

    /// A trim was done; `residentBytes` is the size after it. `afterGrowth`: this policy asked for
    /// it (a trim on the interval leaves the backoff as it is).
    public mutating func trimmed(residentBytes: Int?, afterGrowth: Bool = false) {
        if afterGrowth, let after = residentBytes, let before = previous, let base = baseline {
            let released = before - after
            backoff = released * 4 < before - base ? min(backoff * 2, Self.maximumBackoff) : 1
        }
        baseline = residentBytes ?? baseline
        previous = residentBytes ?? previous
    }
}

/// The process's resident set size, from /proc/self/statm (Linux); nil elsewhere.
public enum ResidentSize {
    private static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    public static func bytes() -> Int? {
        let fd = open("/proc/self/statm", O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        // "size resident shared text lib data dt": the second field, in pages.
        let fields = buffer[..<count].split(separator: UInt8(ascii: " "), maxSplits: 2)
        guard fields.count >= 2 else { return nil }
        var pages = 0
        for digit in fields[1] {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            pages = pages &* 10 &+ Int(digit - UInt8(ascii: "0"))
        }
        return pages * pageSize
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
