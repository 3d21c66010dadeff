import Foundation
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
        let basePort = freePortRange(count: 41)
        let drill = try TestProcess(
            executable: "chatsuite",
            arguments: [
                "drill", "--short", "--data-dir", dataDir.path, "--port", String(basePort), "--rate", "8", "--settle", "5",
            ], environment: ["DATABASE_URL": ""])
        let status = try await drill.waitForExit(timeout: .seconds(600))
        let output = drill.output
        #expect(status == 0, "drill exit status \(String(describing: status)):\n\(output.suffix(6000))")
        #expect(output.contains("Result: **passed**"), "\(output.suffix(6000))")
        for fault in ["kill -9 gateway", "broker stopped 10 s", "PostgreSQL restarted"] {
            #expect(output.contains("| \(fault) |"), "a row for \(fault)")
        }
        if status == nil { drill.signal(SIGKILL) }
    }
}
