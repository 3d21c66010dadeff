import Foundation
import Logging
import Synchronization
import ServiceKit
import ServiceLifecycle
import Testing

/// `MemoryTrim`: every service hands its allocator's free pages back to the kernel on a timer
/// (docs/configuration.md, `memory.trim-interval-seconds`; docs/benchmarks.md, part 15).
@Suite("Memory trim")
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

    /// The process's resident pages, from /proc/self/statm.
    static func residentBytes() throws -> Int {
        let statm = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8).split(separator: " ")
        return try #require(Int(statm[1])) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    @Test("a holed heap: 200 MB of small blocks freed but for every hundredth stays resident until the trim, which hands most of it back")
    func trimReleases() throws {
        try #require(MallocTrim.isAvailable, "this glibc has malloc_trim")
        // 100 000 blocks of 2 KiB (below glibc's mmap threshold: from the heap), each touched.
        var blocks: [UnsafeMutableRawPointer] = []
        for _ in 0..<100_000 {
            let block = try #require(malloc(2_048))
            memset(block, 1, 2_048)
            blocks.append(block)
        }
        // Free all but every hundredth: the survivors pin the heap, so glibc cannot shrink it
        // from the top and keeps the ~196 MB of holes resident.
        for (index, block) in blocks.enumerated() where index % 100 != 0 { free(block) }
        let before = try Self.residentBytes()
        #expect(MallocTrim.run())
        let after = try Self.residentBytes()
        for (index, block) in blocks.enumerated() where index % 100 == 0 { free(block) }
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
}
