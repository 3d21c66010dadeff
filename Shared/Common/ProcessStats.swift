import Foundation

/// Process statistics from /proc (Linux): the load generator's CPU and memory columns, and
/// tests that bound a process's own memory.
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
