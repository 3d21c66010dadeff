import Foundation
import ServiceCatalog
import Testing
import TestSupport

/// The fault drill's short form (one fault of each kind: a service SIGKILLed and restarted by
/// the launcher, the broker frozen for 10 s, PostgreSQL restarted) under steady traffic: nothing
/// accepted is lost, no 500 anywhere and no 5xx outside an outage, coins credited exactly once,
/// native sockets get every message once.
@Suite("chatsuite drill", .serialized)
struct DrillTests {
    @Test("chatsuite drill --short passes and prints its table")
    func shortDrill() async throws {
        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("chatsuite-drill-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dataDir) }
        // The suite's ports (ServiceEntry.portSpan), its PostgreSQL at +40 and the fake PortOne at +30.
        let basePort = freePortRange(count: 41, alsoAt: [ServiceEntry.adminPortOffset])
        let drill = try TestProcess(
            executable: "chatsuite",
            arguments: [
                "drill", "--short", "--data-dir", dataDir.path, "--port", String(basePort), "--rate", "8", "--settle", "5",
            ], environment: ["DATABASE_URL": ""])
        let status = try await drill.waitForExit(timeout: .seconds(600))
        let output = drill.output
        #expect(status == 0, "drill exit status \(String(describing: status)):\n\(output.suffix(6000))\n\(Self.suiteWarnings(dataDir))")
        #expect(output.contains("Result: **passed**"), "\(output.suffix(6000))")
        for fault in ["kill -9 gateway", "broker stopped 10 s", "PostgreSQL restarted"] {
            #expect(output.contains("| \(fault) |"), "a row for \(fault)")
        }
        if status == nil { drill.signal(SIGKILL) }
    }

    /// What the services said about the answers the drill counts as failures: their 503s
    /// ("dependency unavailable", with the cause) and errors, from the suite's log (the data
    /// directory is removed after the test, so a failure carries them).
    static func suiteWarnings(_ dataDir: URL) -> String {
        guard let log = try? String(contentsOf: dataDir.appendingPathComponent("drill-suite.log"), encoding: .utf8) else {
            return "(no drill-suite.log)"
        }
        // A logged error with a multi-line detail (an SQL statement) ends with its message: keep
        // the two lines before each match as well.
        let lines = log.split(separator: "\n", omittingEmptySubsequences: false)
        let matches = lines.indices.filter { lines[$0].contains("dependency unavailable") || lines[$0].contains(" error ") }
        let excerpts = matches.suffix(15).map { lines[max(0, $0 - 2)...$0].joined(separator: "\n") }
        return "suite log, dependency-unavailable and error entries (last 15 of \(matches.count)):\n" + excerpts.joined(separator: "\n")
    }
}
