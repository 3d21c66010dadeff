import Common
import Foundation

// Small helpers of `chatsuite loadgen`: bounded concurrency, process statistics from /proc, the
// file-descriptor limit, byte searches for the receive fast path.

/// Runs `body` for every index in `0..<count` with at most `limit` in flight; results in index order.
func concurrentMap<R: Sendable>(_ count: Int, limit: Int, _ body: @escaping @Sendable (Int) async throws -> R) async throws -> [R] {
    var results = [R?](repeating: nil, count: count)
    try await withThrowingTaskGroup(of: (Int, R).self) { group in
        var next = 0
        while next < min(limit, count) {
            let i = next
            group.addTask { (i, try await body(i)) }
            next += 1
        }
        while let (i, r) = try await group.next() {
            results[i] = r
            if next < count {
                let j = next
                group.addTask { (j, try await body(j)) }
                next += 1
            }
        }
    }
    return results.compactMap { $0 }
}

/// A counting semaphore for tasks (bounds concurrent WebSocket handshakes).
final class AsyncGate: Sendable {
    private let state: Locked<(permits: Int, waiters: [CheckedContinuation<Void, Never>])>

    init(permits: Int) { state = Locked((max(1, permits), [])) }

    func acquire() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { s -> Bool in
                if s.permits > 0 { s.permits -= 1; return true }
                s.waiters.append(c)
                return false
            }
            if resumeNow { c.resume() }
        }
    }

    func release() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if s.waiters.isEmpty { s.permits += 1; return nil }
            return s.waiters.removeFirst()
        }
        waiter?.resume()
    }
}

public enum ProcessStats {
    /// Raises the soft open-files limit to the hard limit; returns the new soft limit.
    @discardableResult
    public static func raiseFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return -1 }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
            _ = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        }
        return Int(clamping: limit.rlim_cur)
    }

    /// Resident set size of a process in KiB (`VmRSS` of /proc/<pid>/status), nil if unreadable.
    public static func rssKiB(pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        }
        return nil
    }

    /// User + system CPU seconds of a process and its live direct children (PostgreSQL's
    /// backends are children of its postmaster), from /proc/<pid>/stat fields 14 and 15.
    public static func cpuSeconds(pid: Int32, withChildren: Bool = true) -> Double? {
        guard let own = stat(pid) else { return nil }
        guard withChildren else { return own.cpu }
        return children(of: pid).reduce(own.cpu) { $0 + (stat($1)?.cpu ?? 0) }
    }

    /// Live direct children of a process (nginx's workers of its master).
    public static func children(of pid: Int32) -> [Int32] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry in
            guard let child = Int32(entry), child != pid, let s = stat(child), s.parent == pid else { return nil }
            return child
        }
    }

    private static func stat(_ pid: Int32) -> (parent: Int32, cpu: Double)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // Fields after the command name (which may contain spaces), starting at field 3.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let parent = Int32(fields[1]), let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (parent, (user + system) / (ticks > 0 ? ticks : 100))
    }
}

/// Prints a line at once (stdout is block-buffered when piped; progress must show as it happens).
public func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

extension Duration {
    public var milliseconds: Double { Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15 }
}

/// Nanoseconds of the monotonic clock (comparable across tasks and threads of one process).
public func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Byte-level search used on every received frame (no String or JSON decoding on the hot path).
enum Bytes {
    /// Index just past the first occurrence of `needle` in `haystack`, if any.
    static func end(of needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Int? {
        guard let first = needle.first, haystack.count >= needle.count, let base = haystack.baseAddress else { return nil }
        return needle.withUnsafeBytes { n -> Int? in
            guard let nBase = n.baseAddress else { return nil }
            var i = 0
            let last = haystack.count - needle.count
            while i <= last {
                if haystack[i] == first, memcmp(base + i, nBase, needle.count) == 0 { return i + needle.count }
                i += 1
            }
            return nil
        }
    }

    /// The decimal number starting at `index` (stops at the first non-digit), if any digit.
    static func integer(at index: Int, in haystack: UnsafeRawBufferPointer) -> Int? {
        var i = index
        var value = 0
        while i < haystack.count, haystack[i] >= 0x30, haystack[i] <= 0x39, i - index < 18 {
            value = value * 10 + Int(haystack[i] - 0x30)
            i += 1
        }
        return i > index ? value : nil
    }
}
