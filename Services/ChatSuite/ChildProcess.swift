import Foundation
import Synchronization

/// One executable of the suite started by the launcher, its output prefixed line by line.
final class ChildProcess: Sendable {
    let name: String
    let port: Int
    let startedAt = ContinuousClock.now
    private let process: Process
    private let exited = Mutex<Int32?>(nil)

    /// - Parameter onExit: the pid and the exit status (the exit code, or 128 + the signal number
    ///   for a process killed by a signal, as shells and compose report it).
    init(
        name: String, executable: URL, port: Int, environment: [String: String], color: Int, output: ConsoleWriter,
        onExit: @escaping @Sendable (_ pid: Int32, _ status: Int32) -> Void
    ) throws {
        self.name = name
        self.port = port
        let process = Process()
        process.executableURL = executable
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        self.process = process
        let prefix = "\u{1B}[\(color)m\(name.padding(toLength: 12, withPad: " ", startingAt: 0))|\u{1B}[0m "
        let reader = pipe.fileHandleForReading
        let thread = Thread {
            var pending = Data()
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = pending[pending.startIndex..<newline]
                    output.write(prefix + String(decoding: line, as: UTF8.self))
                    pending.removeSubrange(pending.startIndex...newline)
                }
            }
            if !pending.isEmpty { output.write(prefix + String(decoding: pending, as: UTF8.self)) }
        }
        thread.name = "log-\(name)"
        process.terminationHandler = { [weak self] p in
            let status = p.terminationReason == .uncaughtSignal ? 128 + p.terminationStatus : p.terminationStatus
            self?.exited.withLock { $0 = status }
            onExit(p.processIdentifier, status)
        }
        try process.run()
        thread.start()
    }

    var pid: Int32 { process.processIdentifier }
    var exitStatus: Int32? { exited.withLock { $0 } }
    var isRunning: Bool { exitStatus == nil }

    func signal(_ sig: Int32) {
        if isRunning { kill(process.processIdentifier, sig) }
    }
}

/// Serialises lines from many threads onto stdout.
final class ConsoleWriter: Sendable {
    private let lock = Mutex(())

    func write(_ line: String) {
        lock.withLock { _ in
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
    }
}
