import Foundation
import Synchronization

/// Writes NDJSON lines into `<root>/<topic>/date=YYYY-MM-DD/hour=HH/part-<run>.ndjson` (UTC hour
/// of each event's `time`), the Hive-style layout DuckDB, Spark and Athena read as partitions.
/// Each export run writes its own part files, so runs into the same directory never overwrite
/// each other (readers de-duplicate by the CloudEvents `id`).
final class HourPartitionWriter: Sendable {
    private struct State {
        var handles: [String: FileHandle] = [:]
        var files: [String: Int] = [:]  // relative path → lines
    }
    private let root: URL
    private let run: String
    private let state = Mutex(State())

    /// Relative path → lines written.
    var files: [String: Int] { state.withLock { $0.files } }

    init(root: URL, run: String) {
        self.root = root
        self.run = run
    }

    static func relativeDirectory(topic: String, time: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour], from: time)
        func two(_ n: Int?) -> String { String(format: "%02d", n ?? 0) }
        return "\(topic)/date=\(String(format: "%04d", c.year ?? 0))-\(two(c.month))-\(two(c.day))/hour=\(two(c.hour))"
    }

    func append(line: Data, topic: String, time: Date) throws {
        let path = Self.relativeDirectory(topic: topic, time: time) + "/part-\(run).ndjson"
        try state.withLock { state in
            let handle: FileHandle
            if let open = state.handles[path] {
                handle = open
            } else {
                let url = root.appendingPathComponent(path)
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                guard FileManager.default.createFile(atPath: url.path, contents: nil) else { throw ExportError("cannot create \(url.path)") }
                handle = try FileHandle(forWritingTo: url)
                state.handles[path] = handle
            }
            var bytes = line
            bytes.append(UInt8(ascii: "\n"))
            try handle.write(contentsOf: bytes)
            state.files[path, default: 0] += 1
        }
    }

    func close() throws {
        try state.withLock { state in
            for handle in state.handles.values { try handle.close() }
            state.handles = [:]
        }
    }
}
