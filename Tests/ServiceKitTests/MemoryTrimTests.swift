import Common
import Foundation
import Logging
import Synchronization
import ServiceKit
import ServiceLifecycle
import Testing
import TestSupport

/// `MemoryTrim`: every service hands its allocator's free pages back to the kernel on a timer and after a burst
/// (docs/configuration.md, `memory.trim-interval-seconds`; docs/benchmarks.md, part 15).
@Suite("Memory trim", .serialized)
struct MemoryTrimTests {
    @Test("memory.trim-interval-seconds: 30 s unless set, 0 is never, negative or over a day does not start")
    func interval() throws {
        #expect(try ServiceSettings(serviceName: "x", environment: [:], arguments: ["x"]).memoryTrimInterval == .seconds(30))
        let set = ServiceSettings(serviceName: "x", environment: [:], arguments: ["x", "--memory-trim-interval-seconds", "5"])
        #expect(try set.memoryTrimInterval == .seconds(5))
        #expect(try ServiceSettings(serviceName: "x", environment: ["MEMORY_TRIM_INTERVAL_SECONDS": "0"], arguments: ["x"]).memoryTrimInterval == nil)
        for bad in ["-1", "86401", "often"] {
            let settings = ServiceSettings(serviceName: "x", environment: ["MEMORY_TRIM_INTERVAL_SECONDS": bad], arguments: ["x"])
            #expect(throws: (any Error).self, "\(bad)") { try settings.memoryTrimInterval }
        }
    }

    /// The process's resident bytes (`ProcessStats.rssKiB`, what the service reads by default).
    static func residentBytes() throws -> Int {
        try #require(ProcessStats.rssKiB(pid: getpid())) * 1024
    }

    /// 100 000 blocks of 2 KiB (below glibc's mmap threshold: from the heap), each touched, then
    /// all freed but every hundredth: the survivors (returned, for the caller to free) pin the
    /// heap, so glibc cannot shrink it from the top and keeps the ~196 MB of holes resident.
    static func holedHeap() throws -> [UnsafeMutableRawPointer] {
        var blocks: [UnsafeMutableRawPointer] = []
        for _ in 0..<100_000 {
            let block = try #require(malloc(2_048))
            memset(block, 1, 2_048)
            blocks.append(block)
        }
        for (index, block) in blocks.enumerated() where index % 100 != 0 { free(block) }
        return blocks.enumerated().filter { $0.offset % 100 == 0 }.map(\.element)
    }

    @Test("a holed heap: 200 MB of small blocks freed but for every hundredth stays resident until the trim, which hands most of it back")
    func trimReleases() throws {
        try #require(MallocTrim.isAvailable, "this glibc has malloc_trim")
        let survivors = try Self.holedHeap()
        defer { for block in survivors { free(block) } }
        let before = try Self.residentBytes()
        #expect(MallocTrim.run())
        let after = try Self.residentBytes()
        #expect(before - after > 100_000_000, "resident \(before) → \(after) bytes")
    }

    @Test("the service trims once per interval until cancelled; without an interval it never trims and runs, in its service group, until the shutdown")
    func ticks() async throws {
        let count = Atomic<Int>(0)
        let trim: @Sendable () -> Bool = {
            count.add(1, ordering: .relaxed)
            return false
        }
        let running = Task { try await MemoryTrim(interval: .milliseconds(50), logger: Logger(label: "test"), trim: trim).run() }
        try await Task.sleep(for: .milliseconds(600))
        running.cancel()
        try await running.value
        let ticks = count.load(ordering: .relaxed)
        #expect((3...12).contains(ticks), "\(ticks) trims in 600 ms at a 50 ms interval")

        // `memory.trim-interval-seconds` 0: a service that returned would end its group (and the
        // executable) as failed.
        let never = Atomic<Int>(0)
        let idle = MemoryTrim(interval: nil, logger: Logger(label: "test")) {
            never.add(1, ordering: .relaxed)
            return false
        }
        let group = ServiceGroup(services: [idle], logger: Logger(label: "test"))
        let ended = Atomic<Bool>(false)
        let groupRun = Task {
            defer { ended.store(true, ordering: .relaxed) }
            try await group.run()
        }
        try await Task.sleep(for: .milliseconds(300))
        let stillRunning = !ended.load(ordering: .relaxed)
        #expect(stillRunning, "without an interval the service keeps running")
        await group.triggerGracefulShutdown()
        try await groupRun.value
        #expect(never.load(ordering: .relaxed) == 0)
    }

    private static let mib = 1 << 20

    @Test("memory.trim-after-growth-mib: 16 MiB unless set, 0 is no burst watch, negative or over 64 GiB does not start")
    func growthSetting() throws {
        #expect(try ServiceSettings(serviceName: "x", environment: [:], arguments: ["x"]).memoryTrimAfterGrowthBytes == 16 * Self.mib)
        let set = ServiceSettings(serviceName: "x", environment: [:], arguments: ["x", "--memory-trim-after-growth-mib", "64"])
        #expect(try set.memoryTrimAfterGrowthBytes == 64 * Self.mib)
        #expect(try ServiceSettings(serviceName: "x", environment: ["MEMORY_TRIM_AFTER_GROWTH_MIB": "0"], arguments: ["x"]).memoryTrimAfterGrowthBytes == nil)
        for bad in ["-1", "65537", "lots"] {
            let settings = ServiceSettings(serviceName: "x", environment: ["MEMORY_TRIM_AFTER_GROWTH_MIB": bad], arguments: ["x"])
            #expect(throws: (any Error).self, "\(bad)") { try settings.memoryTrimAfterGrowthBytes }
        }
    }

    @Test("the policy trims once the resident size grew by the threshold and stopped growing, not while it grows, not for less, not on unreadable sizes")
    func policy() {
        var policy = TrimPolicy(growthBytes: 16 * Self.mib)
        policy.trimmed(residentBytes: 100 * Self.mib)
        // A burst: growing by more than a MiB a reading is not settled.
        for size in [100, 120, 140, 160] { #expect(!Self.decide(&policy, size * Self.mib), "\(size) MiB, still growing") }
        #expect(!Self.decide(&policy, nil))
        // Settled 60 MiB above the last trim.
        #expect(Self.decide(&policy, 160 * Self.mib + 128 * 1024))
        policy.trimmed(residentBytes: 110 * Self.mib)
        // Less than the threshold above the trim's result, settled or not: no trim.
        for size in [115, 120, 125, 125, 125] { #expect(!Self.decide(&policy, size * Self.mib), "\(size) MiB") }
        // The size shrank on its own: growth counts from the lower size.
        #expect(!Self.decide(&policy, 90 * Self.mib))
        // Grown by the threshold, but by more than a quarter MiB since the reading before: not yet.
        for size in [105, 106] { #expect(!Self.decide(&policy, size * Self.mib), "\(size) MiB") }
        #expect(Self.decide(&policy, 106 * Self.mib))
        // A large heap grows by an eighth of itself before a trim: 400 MiB by 50 MiB.
        var large = TrimPolicy(growthBytes: 16 * Self.mib)
        large.trimmed(residentBytes: 400 * Self.mib)
        for size in [449, 449, 450] { #expect(!Self.decide(&large, size * Self.mib), "\(size) MiB") }
        #expect(Self.decide(&large, 450 * Self.mib))
        // No trim before a first reading to measure from.
        var fresh = TrimPolicy(growthBytes: 16 * Self.mib)
        #expect(!Self.decide(&fresh, 500 * Self.mib))
        #expect(!Self.decide(&fresh, 500 * Self.mib))
    }

    @Test("a trim after growth that released under a quarter of it doubles the growth the next one waits for; any trim that releases resets it")
    func backoff() {
        var policy = Self.backedOff()
        for size in [140, 140, 150, 150] { #expect(!Self.decide(&policy, size * Self.mib), "\(size) MiB, under 32 MiB above 119") }
        #expect(!Self.decide(&policy, 151 * Self.mib), "32 MiB above, but a MiB more than a second before")
        #expect(Self.decide(&policy, 151 * Self.mib))
        // 20 MiB of 32 released: back to the base threshold (an eighth of 131 MiB: 16.4 MiB).
        policy.trimmed(residentBytes: 131 * Self.mib, afterGrowth: true)
        for size in [147, 147, 148] { #expect(!Self.decide(&policy, size * Self.mib), "\(size) MiB") }
        #expect(Self.decide(&policy, 148 * Self.mib))
        // A trim on the interval that released nothing does not back off.
        policy.trimmed(residentBytes: 148 * Self.mib)
        #expect(!Self.decide(&policy, 167 * Self.mib))
        #expect(Self.decide(&policy, 167 * Self.mib))
        // Backed off to 64×, the watch is not over for good: an interval trim that releases
        // resets it.
        for _ in 0..<7 { policy.trimmed(residentBytes: 167 * Self.mib, afterGrowth: true) }
        for size in [300, 300] { #expect(!Self.decide(&policy, size * Self.mib), "\(size) MiB, backed off") }
        policy.trimmed(residentBytes: 200 * Self.mib)
        #expect(!Self.decide(&policy, 230 * Self.mib))
        #expect(Self.decide(&policy, 230 * Self.mib), "30 MiB above 200 after the reset")
    }

    @Test(
        "a burst that ends quietly is trimmed once after three still readings when it grew by half the threshold since the last trim, backed off or not; not for less, not while it moves, not twice"
    )
    func quietEnd() {
        // Backed off: the next growth trim waits for 32 MiB above 119.
        var policy = Self.backedOff()
        // The burst ends 9 MiB above: its first reading, then two still ones — not yet; the third
        // still reading trims.
        let ended = 128 * Self.mib
        for reading in 0..<3 { #expect(!Self.decide(&policy, ended + reading * 64 * 1024), "reading \(reading)") }
        #expect(Self.decide(&policy, ended))
        // Not twice in one quiet spell (this trim released nothing).
        policy.trimmed(residentBytes: ended, afterGrowth: true)
        for _ in 0..<6 { #expect(!Self.decide(&policy, ended)) }
        // Under half the threshold above the last trim: still for long, no trim.
        var small = TrimPolicy(growthBytes: 16 * Self.mib)
        small.trimmed(residentBytes: 100 * Self.mib)
        for _ in 0..<8 { #expect(!Self.decide(&small, 107 * Self.mib)) }
        // Moving by more than a quarter MiB a reading is not still: no trim until it holds.
        var moving = TrimPolicy(growthBytes: 16 * Self.mib)
        moving.trimmed(residentBytes: 100 * Self.mib)
        for size in [110, 111, 110, 111, 110, 111] { #expect(!Self.decide(&moving, size * Self.mib), "\(size) MiB") }
        for _ in 0..<2 { #expect(!Self.decide(&moving, 111 * Self.mib)) }
        #expect(Self.decide(&moving, 111 * Self.mib), "the third reading still after the last move")
    }

    @Test("with the burst watch and no interval: one trim per settled burst, none while the size holds")
    func watchTrimsSettledBursts() async throws {
        let size = Atomic<Int>(100 * Self.mib)
        let count = Atomic<Int>(0)
        let trimmer = MemoryTrim(
            interval: nil, afterGrowthBytes: 16 * Self.mib, watchInterval: .milliseconds(20), logger: Logger(label: "test"),
            trim: {
                count.add(1, ordering: .relaxed)
                return true
            },
            resident: { size.load(ordering: .relaxed) })
        let running = Task { try await trimmer.run() }
        defer { running.cancel() }
        try await Task.sleep(for: .milliseconds(200))
        #expect(count.load(ordering: .relaxed) == 0, "no growth, no trim")
        size.store(180 * Self.mib, ordering: .relaxed)
        try await Eventually.wait("a trim after the growth") { count.load(ordering: .relaxed) >= 1 }
        // The size holds at 180 MiB (nothing was released): no trim again.
        try await Task.sleep(for: .milliseconds(300))
        #expect(count.load(ordering: .relaxed) == 1)
        // That trim released nothing: the next waits for twice the growth (45 MiB from 180).
        size.store(240 * Self.mib, ordering: .relaxed)
        try await Eventually.wait("a trim after the second growth") { count.load(ordering: .relaxed) >= 2 }
        try await Task.sleep(for: .milliseconds(200))
        #expect(count.load(ordering: .relaxed) == 2)
        running.cancel()
        try await running.value
    }

    @Test("a holed heap left by a burst is handed back by the burst watch, with no interval, once the burst is over")
    func watchReleasesAHoledHeap() async throws {
        try #require(MallocTrim.isAvailable, "this glibc has malloc_trim")
        // The watch sees the real resident size only once the burst (allocation and frees) is
        // over, so it cannot trim halfway through it.
        let baseline = try Self.residentBytes()
        let burstOver = Atomic<Bool>(false)
        let trims = Atomic<Int>(0)
        let trimmer = MemoryTrim(
            interval: nil, afterGrowthBytes: 16 * Self.mib, watchInterval: .milliseconds(50), logger: Logger(label: "test"),
            trim: {
                // Counted once done: the test reads the resident size when it sees the count.
                let released = MallocTrim.run()
                trims.add(1, ordering: .relaxed)
                return released
            },
            resident: { burstOver.load(ordering: .relaxed) ? ProcessStats.rssKiB(pid: getpid()).map { $0 * 1024 } : baseline })
        let running = Task { try await trimmer.run() }
        defer { running.cancel() }
        let survivors = try Self.holedHeap()
        defer { for block in survivors { free(block) } }
        let before = try Self.residentBytes()
        burstOver.store(true, ordering: .relaxed)
        try await Eventually.wait("a trim after the burst") { trims.load(ordering: .relaxed) >= 1 }
        let after = try Self.residentBytes()
        #expect(before - after > 100_000_000, "resident \(before) → \(after) bytes")
        running.cancel()
        try await running.value
    }

    /// A policy whose first trim after growth (100 → 120 MiB) released 1 MiB of 20: the growth
    /// was real, so it backed off (the next growth trim waits for twice the threshold).
    private static func backedOff() -> TrimPolicy {
        var policy = TrimPolicy(growthBytes: 16 * mib)
        policy.trimmed(residentBytes: 100 * mib)
        #expect(!decide(&policy, 120 * mib))
        #expect(decide(&policy, 120 * mib))
        policy.trimmed(residentBytes: 119 * mib, afterGrowth: true)
        return policy
    }

    /// `policy.shouldTrim(residentBytes:)` (`#expect` cannot call a mutating member itself).
    private static func decide(_ policy: inout TrimPolicy, _ residentBytes: Int?) -> Bool {
        policy.shouldTrim(residentBytes: residentBytes)
    }
}
