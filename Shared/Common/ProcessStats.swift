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

    /// User + system CPU seconds of a process and, `withChildren`, of its children: the live
    /// direct ones and every one it has reaped (PostgreSQL's backends are children of its
    /// postmaster), from /proc/<pid>/stat fields 14 to 17.
    public static func cpuSeconds(pid: Int32, withChildren: Bool = true) -> Double? {
        reading(pid: pid, withChildren: withChildren).map { $0.userSeconds + $0.systemSeconds }
    }

    /// Where a process's CPU went over a window: user and system seconds, and how often its
    /// threads were switched out because they waited (voluntary) or because the scheduler gave
    /// the core to another task (involuntary). The switches are exact counts, and so is the sum
    /// of the two times; their split is the kernel's estimate (it samples user or system at its
    /// timer tick and scales the samples to the measured run time, never letting either go
    /// back), so over a window of seconds it can lean either way.
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

        public static let zero = Usage(userSeconds: 0, systemSeconds: 0, voluntarySwitches: 0, involuntarySwitches: 0)

        /// Two processes' usage together (a server of several processes).
        public static func + (a: Usage, b: Usage) -> Usage {
            Usage(
                userSeconds: a.userSeconds + b.userSeconds, systemSeconds: a.systemSeconds + b.systemSeconds,
                voluntarySwitches: a.voluntarySwitches + b.voluntarySwitches, involuntarySwitches: a.involuntarySwitches + b.involuntarySwitches)
        }
    }

    /// A process's counters at one moment; `usage(since:)` of two is a window's `Usage`. The CPU
    /// times are the process's (every thread's, exited ones too); the switches are kept per
    /// thread, because Linux shows them only per live thread: a thread that ended within the
    /// window takes its switches with it (an undercount, never a negative figure), and one that
    /// began within it counts from zero.
    public struct Reading: Sendable {
        public var userSeconds: Double
        public var systemSeconds: Double
        /// Per thread id (unique across processes, so children's threads share the table).
        public var switches: [Int32: Switches]

        public init(userSeconds: Double, systemSeconds: Double, switches: [Int32: Switches]) {
            self.userSeconds = userSeconds
            self.systemSeconds = systemSeconds
            self.switches = switches
        }

        public func usage(since earlier: Reading) -> Usage {
            var usage = Usage(
                userSeconds: userSeconds - earlier.userSeconds, systemSeconds: systemSeconds - earlier.systemSeconds, voluntarySwitches: 0,
                involuntarySwitches: 0)
            for (thread, now) in switches {
                let before = earlier.switches[thread] ?? Switches()
                // A thread id reused within the window starts below its predecessor's counts.
                let fresh = now.voluntary < before.voluntary || now.involuntary < before.involuntary
                usage.voluntarySwitches += fresh ? now.voluntary : now.voluntary - before.voluntary
                usage.involuntarySwitches += fresh ? now.involuntary : now.involuntary - before.involuntary
            }
            return usage
        }
    }

    /// One thread's switches so far.
    public struct Switches: Sendable {
        public var voluntary: Int
        public var involuntary: Int

        public init(voluntary: Int = 0, involuntary: Int = 0) {
            self.voluntary = voluntary
            self.involuntary = involuntary
        }
    }

    /// A process's `Reading`; nil if the process cannot be read. `withChildren` adds its
    /// children's CPU: the live direct children's own, and what the kernel added to the process
    /// for each child it reaped (/proc/<pid>/stat fields 16 and 17). A child that ends within a
    /// window moves from the first sum to the second, so the window keeps its CPU; summing the
    /// live children alone lost it (a PostgreSQL backend that closed made the window negative).
    /// Its threads' switches end with it, as a thread's do.
    public static func reading(pid: Int32, withChildren: Bool = true) -> Reading? {
        guard let own = stat(pid) else { return nil }
        var reading = Reading(userSeconds: own.user, systemSeconds: own.system, switches: threadSwitches(of: pid))
        guard withChildren else { return reading }
        reading.userSeconds += own.reapedUser
        reading.systemSeconds += own.reapedSystem
        for child in children(of: pid) {
            guard let childStat = stat(child) else { continue }
            reading.userSeconds += childStat.user
            reading.systemSeconds += childStat.system
            reading.switches.merge(threadSwitches(of: child)) { $1 }
        }
        return reading
    }

    /// The voluntary and involuntary switches of every live thread of `pid`
    /// (/proc/<pid>/task/*/status).
    private static func threadSwitches(of pid: Int32) -> [Int32: Switches] {
        var table: [Int32: Switches] = [:]
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return table }
        for thread in threads {
            guard let id = Int32(thread), let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/status", encoding: .utf8)
            else { continue }
            var switches = Switches()
            for line in text.split(separator: "\n") {
                if line.hasPrefix("voluntary_ctxt_switches:") {
                    switches.voluntary = Int(line.dropFirst(24).trimmingCharacters(in: .whitespaces)) ?? 0
                } else if line.hasPrefix("nonvoluntary_ctxt_switches:") {
                    switches.involuntary = Int(line.dropFirst(27).trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
            table[id] = switches
        }
        return table
    }

    /// Live direct children of a process (nginx's workers of its master).
    public static func children(of pid: Int32) -> [Int32] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry in
            guard let child = Int32(entry), child != pid, let s = stat(child), s.parent == pid else { return nil }
            return child
        }
    }

    /// A process's parent, its own CPU, and its reaped children's (fields 4 and 14 to 17).
    private static func stat(_ pid: Int32) -> (parent: Int32, user: Double, system: Double, reapedUser: Double, reapedSystem: Double)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // Fields after the command name (which may contain spaces), starting at field 3.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 14, let parent = Int32(fields[1]), let user = Double(fields[11]), let system = Double(fields[12]),
            let reapedUser = Double(fields[13]), let reapedSystem = Double(fields[14])
        else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let perSecond = ticks > 0 ? ticks : 100
        return (parent, user / perSecond, system / perSecond, reapedUser / perSecond, reapedSystem / perSecond)
    }
}
