import Foundation
import Testing
import TestSupport

/// A real third-party Socket.IO client (python-socketio from PyPI, in the venvs
/// `scripts/setup-debian.sh` creates) running `clients/listen.py`, observed through its JSON lines.
public struct PythonSocketClient: Sendable {
    public enum Generation: String, Sendable {
        /// python-socketio 5: Engine.IO v4, Socket.IO protocol v5.
        case eio4 = "pyenv"
        /// python-socketio 4.6.1 + python-engineio 3.14.2: Engine.IO v3, Socket.IO protocol v4.
        case eio3 = "pyenv-eio3"
    }

    public let process: TestProcess
    let stopFile: String

    public static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// - Parameter namespaces: `(namespace, event)` pairs to join and listen to.
    public static func start(
        _ generation: Generation, port: Int, namespaces: [(String, String)], transports: String = "polling,websocket",
        token: String? = nil, changesocketid: String? = nil, headers: [String: String] = [:]
    ) throws -> PythonSocketClient {
        let python = repository.appendingPathComponent(".devdata/\(generation.rawValue)/bin/python").path
        let script = repository.appendingPathComponent("Tests/GatewayTests/Realtime/clients/listen.py").path
        let stopFile = FileManager.default.temporaryDirectory.appendingPathComponent("sio-stop-\(UUID().uuidString)").path
        var arguments = ["-u", script, "--url", "http://127.0.0.1:\(port)", "--transports", transports, "--stop-file", stopFile]
        for (namespace, event) in namespaces { arguments += ["--namespace", "\(namespace):\(event)"] }
        if let token { arguments += ["--token", token] }
        if let changesocketid { arguments += ["--changesocketid", changesocketid] }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { arguments += ["--header", "\(name):\(value)"] }
        return PythonSocketClient(process: try TestProcess(path: python, arguments: arguments), stopFile: stopFile)
    }

    /// The JSON lines printed so far.
    public var lines: [[String: Any]] {
        process.output.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("{") else { return nil }
            return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    public func lines(_ type: String) -> [[String: Any]] {
        lines.filter { $0["type"] as? String == type }
    }

    /// Received events (their first argument).
    public func events(_ name: String) -> [[String: Any]] {
        lines("event").filter { $0["event"] as? String == name }.compactMap { $0["data"] as? [String: Any] }
    }

    /// Waits until a line of `type` is printed; fails with the client's output otherwise.
    @discardableResult
    public func waitFor(_ type: String, timeout: Duration = .seconds(20)) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = lines(type).first { return line }
            if process.reap() != nil { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("no \(type) line from the Socket.IO client:\n\(process.output.suffix(3000))")
        throw CancellationError()
    }

    /// Disconnects the client and waits for it to exit.
    public func stop() async throws {
        _ = FileManager.default.createFile(atPath: stopFile, contents: nil)
        if try await process.waitForExit(timeout: .seconds(10)) == nil {
            process.signal(SIGKILL)
            _ = try await process.waitForExit(timeout: .seconds(5))
        }
        try? FileManager.default.removeItem(atPath: stopFile)
    }
}
