import Common
import Foundation
import Synchronization

/// A child process for integration tests: spawned with posix_spawn, output captured in a file
/// (no pipes to fill up or keep open), exit observed with `waitpid`.
public final class TestProcess: Sendable {
    public let pid: pid_t
    public let outputPath: String
    private let status = Mutex<Int32?>(nil)

    /// The folder holding the suite's executables: `CHATSUITE_BIN_DIR`, else `.build/debug` of
    /// this package.
    public static var binDirectory: URL {
        if let dir = ProcessInfo.processInfo.environment["CHATSUITE_BIN_DIR"] { return URL(fileURLWithPath: dir) }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/debug")
    }

    public struct NotBuilt: Error, CustomStringConvertible {
        public let description: String
    }

    public convenience init(executable name: String, arguments: [String] = [], environment: [String: String] = [:], inheritEnvironment: Bool = true) throws {
        let path = Self.binDirectory.appendingPathComponent(name).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw NotBuilt(description: "\(path) is missing: run `swift build` before the integration tests")
        }
        try self.init(path: path, arguments: arguments, environment: environment, inheritEnvironment: inheritEnvironment)
    }

    /// Any program by path (e.g. a test client's interpreter).
    public init(path: String, arguments: [String] = [], environment: [String: String] = [:], inheritEnvironment: Bool = true) throws {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw NotBuilt(description: "\(path) is missing or not executable")
        }
        let name = URL(fileURLWithPath: path).lastPathComponent
        outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("test-\(name)-\(UUID().uuidString).log").path
        // Tracing settings one test puts in this process's environment (swift-otel reads it) are
        // not every child's: a child gets them only when its test passes them.
        var env = inheritEnvironment ? ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OTEL_") } : [:]
        for (k, v) in environment { env[k] = v }
        pid = try spawnProcess(path: path, arguments: arguments, environment: env, outputPath: outputPath)
    }

    public var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    /// Non-blocking: the exit status once the process ended (reaps it), else nil.
    public func reap() -> Int32? {
        status.withLock { status in
            if let status { return status }
            var raw: Int32 = 0
            if waitpid(pid, &raw, WNOHANG) == pid { status = exitCode(fromWaitStatus: raw) }
            return status
        }
    }

    /// Waits (polling) for exit; nil if still running after `timeout`.
    public func waitForExit(timeout: Duration) async throws -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status = reap() { return status }
            try await Task.sleep(for: .milliseconds(50))
        }
        return reap()
    }

    /// Waits until the output contains `text`; throws if the process exits or time runs out.
    public func waitForOutput(_ text: String, timeout: Duration) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let out = output
            if out.contains(text) { return out }
            if let status = reap() {
                throw NotBuilt(description: "process exited (\(status)) before printing '\(text)':\n\(out.suffix(4000))")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw NotBuilt(description: "timed out waiting for '\(text)':\n\(output.suffix(4000))")
    }

    public func signal(_ sig: Int32) {
        if reap() == nil { kill(pid, sig) }
    }

    /// Whether a live process with this pid exists (a zombie waiting to be reaped counts as gone).
    public static func exists(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 || errno != ESRCH else { return false }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        let state = stat[stat.index(after: close)...].split(separator: " ").first
        return state != "Z" && state != "X"
    }

    /// Waits up to `timeout` for `pid` to disappear; true when it did.
    public static func waitUntilGone(_ pid: pid_t, timeout: Duration = .seconds(10)) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while exists(pid) {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(50))
        }
        return true
    }

    deinit {
        if reap() == nil {
            kill(pid, SIGKILL)
            var raw: Int32 = 0
            waitpid(pid, &raw, 0)
        }
        unlink(outputPath)
    }
}

/// A base port whose `count` consecutive ports are free right now, chosen below Linux's ephemeral
/// range (32768–60999) so outgoing connections and in-process brokers cannot take them meanwhile.
///
/// A range handed out once is never handed out again in this process: tests run in parallel, and
/// a range picked but not yet bound (a launcher still starting its services) looks free to the
/// next caller. Without the reservation two dev stacks could be given overlapping ranges, and one
/// of them fails with "Address already in use".
///
/// `alsoAt` names single ports at offsets from the base that the caller binds too (a gateway's
/// admin listener at +1000); they are checked and reserved with the range.
public func freePortRange(count: Int, alsoAt offsets: [Int] = []) -> Int {
    let reach = max(count, (offsets.max() ?? 0) + 1)
    while true {
        let base = Int.random(in: 20_000..<(32_000 - reach))
        let ranges = [base..<(base + count)] + offsets.map { (base + $0)..<(base + $0 + 1) }
        guard ranges.allSatisfy({ $0.allSatisfy(isPortFree) }) else { continue }
        let reserved = handedOutPorts.withLock { ports in
            guard ranges.allSatisfy({ range in ports.allSatisfy { !range.overlaps($0) } }) else { return false }
            ports.append(contentsOf: ranges)
            return true
        }
        if reserved { return base }
    }
}

/// Every range `freePortRange` has returned in this process (a few hundred ports in a full run).
private let handedOutPorts = Mutex<[Range<Int>]>([])

private func isPortFree(_ port: Int) -> Bool {
    withLoopbackSocket(port) { fd, address, length in bind(fd, address, length) == 0 }
}

/// Whether something accepts TCP connections on 127.0.0.1:`port` (a process started, listening).
public func isListening(_ port: Int) -> Bool {
    withLoopbackSocket(port) { fd, address, length in connect(fd, address, length) == 0 }
}

/// Runs `body` with a new TCP socket and the address 127.0.0.1:`port`; closes the socket after.
private func withLoopbackSocket(_ port: Int, _ body: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Bool) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr = in_addr(s_addr: inet_addr("127.0.0.1"))
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
}
