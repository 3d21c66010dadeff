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
        usage(pid: pid, withChildren: withChildren)?.cpuSeconds
    }

    /// Where a process's CPU went: user and system seconds (every thread's, exited ones too),
    /// and how often its threads were switched out, because they waited (voluntary) or because
    /// the scheduler gave the core to another task (involuntary). The switches are summed over
    /// the live threads (/proc/<pid>/task/*/status), so a thread that exited takes its count
    /// with it. A difference of two readings is a measurement's figure. The switches are exact
    /// counts, and so is the sum of the two times; their split is the kernel's estimate (it
    /// samples user or system at its timer tick and scales the samples to the measured run
    /// time, never letting either go back), so over a window of seconds it can lean either way.
    public struct Usage: Sendable, Codable, Equatable {
        public var userSeconds: Double
        public var systemSeconds: Double
        public var voluntarySwitches: Int
        public var involuntarySwitches: Int

        public init(userSeconds: Double, systemSeconds: Double, voluntarySwitches: Int, involuntarySwitches: Int) {
            self.userSeconds = userSeconds
            self.systemSeconds = systemSeconds
            self.voluntarySwitches = voluntarySwitches
            self.involuntarySwitches = involuntarySwitches
        }

        public var cpuSeconds: Double { userSeconds + systemSeconds }

        public static func + (a: Usage, b: Usage) -> Usage {
            Usage(
                userSeconds: a.userSeconds + b.userSeconds, systemSeconds: a.systemSeconds + b.systemSeconds,
                voluntarySwitches: a.voluntarySwitches + b.voluntarySwitches, involuntarySwitches: a.involuntarySwitches + b.involuntarySwitches)
        }

        public static func - (a: Usage, b: Usage) -> Usage {
            Usage(
                userSeconds: a.userSeconds - b.userSeconds, systemSeconds: a.systemSeconds - b.systemSeconds,
                voluntarySwitches: a.voluntarySwitches - b.voluntarySwitches, involuntarySwitches: a.involuntarySwitches - b.involuntarySwitches)
        }
    }

    /// A process's `Usage`, with its live direct children's when `withChildren`; nil if the
    /// process cannot be read.
    public static func usage(pid: Int32, withChildren: Bool = true) -> Usage? {
        guard let own = stat(pid) else { return nil }
        let usage = own.usage + switches(of: pid)
        guard withChildren else { return usage }
        return children(of: pid).reduce(usage) { total, child in
            guard let childStat = stat(child) else { return total }
            return total + childStat.usage + switches(of: child)
        }
    }

    /// The voluntary and involuntary switches of every live thread of `pid` (CPU times zero).
    private static func switches(of pid: Int32) -> Usage {
        var total = Usage(userSeconds: 0, systemSeconds: 0, voluntarySwitches: 0, involuntarySwitches: 0)
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return total }
        for thread in threads {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/status", encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") {
                if line.hasPrefix("voluntary_ctxt_switches:") {
                    total.voluntarySwitches += Int(line.dropFirst(24).trimmingCharacters(in: .whitespaces)) ?? 0
                } else if line.hasPrefix("nonvoluntary_ctxt_switches:") {
                    total.involuntarySwitches += Int(line.dropFirst(27).trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
        }
        return total
    }

    /// Live direct children of a process (nginx's workers of its master).
    public static func children(of pid: Int32) -> [Int32] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry in
            guard let child = Int32(entry), child != pid, let s = stat(child), s.parent == pid else { return nil }
            return child
        }
    }

    private static func stat(_ pid: Int32) -> (parent: Int32, usage: Usage)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // Fields after the command name (which may contain spaces), starting at field 3.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let parent = Int32(fields[1]), let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let perSecond = ticks > 0 ? ticks : 100
        return (parent, Usage(userSeconds: user / perSecond, systemSeconds: system / perSecond, voluntarySwitches: 0, involuntarySwitches: 0))
    }
}
