import Common
import Foundation

// Small helpers of `chatsuite loadgen`: bounded concurrency and byte searches for the receive fast
// path (process statistics and the file-descriptor limit are Common's `ProcessStats`).

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
