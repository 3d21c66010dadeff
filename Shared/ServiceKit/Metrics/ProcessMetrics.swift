import Foundation

/// The standard `process_*` metrics (as Prometheus' client libraries name them), read from
/// `/proc/self` at scrape time: CPU seconds, resident and virtual memory, open and maximum file
/// descriptors, start time. Empty where `/proc` is missing (macOS).
enum ProcessMetrics {
    /// Clock ticks per second (`sysconf(_SC_CLK_TCK)`) and the page size.
    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
    private static let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
    private static let bootTime: Double? = {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        return stat.split(separator: "\n").first { $0.hasPrefix("btime ") }.flatMap { Double($0.dropFirst(6)) }
    }()

    static func render() -> String {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let closing = stat.lastIndex(of: ")")
        else { return "" }
        // Fields after "pid (comm) ": state is field 3; utime 14, stime 15, starttime 22, vsize 23, rss 24.
        let fields = stat[stat.index(after: closing)...].split(separator: " ")
        func field(_ number: Int) -> Double? { fields.indices.contains(number - 3) ? Double(fields[number - 3]) : nil }
        var lines: [String] = []
        func gauge(_ name: String, _ help: String, _ value: Double?, type: String = "gauge") {
            guard let value else { return }
            lines.append("# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(value)")
        }
        if let user = field(14), let system = field(15) {
            gauge("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", (user + system) / ticksPerSecond, type: "counter")
        }
        gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", field(23))
        gauge("process_resident_memory_bytes", "Resident memory size in bytes.", field(24).map { $0 * pageSize })
        if let start = field(22), let bootTime {
            gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", bootTime + start / ticksPerSecond)
        }
        let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
        gauge("process_open_fds", "Number of open file descriptors.", fds.map(Double.init))
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            gauge("process_max_fds", "Maximum number of open file descriptors.", Double(limit.rlim_cur))
        }
        return lines.isEmpty ? "" : lines.joined(separator: "\n") + "\n"
    }
}
