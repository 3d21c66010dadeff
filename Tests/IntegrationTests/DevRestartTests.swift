import AsyncHTTPClient
import Common
import Foundation
import ServiceCatalog
import NIOCore
import NIOHTTP1
import Testing
import TestSupport

/// The launcher keeps the suite up like compose's `restart: unless-stopped`: a crashed service is
/// started again (with back-off) instead of the whole suite stopping.
@Suite("chatsuite dev restarts a crashed service", .serialized)
struct DevRestartTests {
    @Test("chat killed with SIGKILL is restarted and ready again while the launcher keeps running; Ctrl-C still stops everything")
    func crashedServiceComesBack() async throws {
        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("chatsuite-restart-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dataDir) }
        let basePort = freePortRange(count: ServiceEntry.portSpan + 1, alsoAt: [ServiceEntry.adminPortOffset])
        let chatPort = basePort + 3  // gateway, auth, workspace, chat, …
        let launcher = try TestProcess(
            executable: "chatsuite",
            arguments: [
                "dev", "--data-dir", dataDir.path, "--port", String(basePort), "--postgres-port", String(basePort + ServiceEntry.portSpan), "--log-level",
                "warning",
            ], environment: ["DATABASE_URL": ""])
        let output = try await launcher.waitForOutput("chatsuite is ready", timeout: .seconds(180))
        let startedLine = try #require(output.split(separator: "\n").first { $0.hasPrefix("started: ") })
        let pids = startedLine.matches(of: /pid (\d+)/).compactMap { Int32($0.output.1) }
        let chatPid = try #require(startedLine.firstMatch(of: /chat \(pid (\d+)\)/).flatMap { Int32($0.output.1) })

        kill(chatPid, SIGKILL)
        _ = try await launcher.waitForOutput("restart chat after exit 137 (attempt 1, in 0.5 s)", timeout: .seconds(30))
        let restarted = try await launcher.waitForOutput("restarted chat (pid ", timeout: .seconds(30))
        let newPid = try #require(restarted.firstMatch(of: /restarted chat \(pid (\d+)\)/).flatMap { Int32($0.output.1) })
        #expect(newPid != chatPid)
        #expect(launcher.reap() == nil, "the launcher keeps running:\n\(launcher.output.suffix(2000))")

        // Back: ready again (its consumers rejoined their groups), the other services untouched.
        #expect(try await Self.becomesReady(port: chatPort, timeout: .seconds(120)), "chat answers /health/ready again:\n\(launcher.output.suffix(3000))")
        _ = try await launcher.waitForOutput("chat is ready again", timeout: .seconds(10))
        for pid in pids where pid != chatPid {
            #expect(TestProcess.exists(pid), "service pid \(pid) kept running")
        }
        #expect(launcher.reap() == nil)

        launcher.signal(SIGINT)
        let status = try await launcher.waitForExit(timeout: .seconds(60))
        #expect(status == 0, "launcher exits cleanly:\n\(launcher.output.suffix(2000))")
        let shutdown = launcher.output.components(separatedBy: "stopping…").last ?? ""
        #expect(!shutdown.contains("restart "), "nothing is restarted during shutdown:\n\(shutdown.suffix(2000))")
        for pid in pids + [newPid] {
            #expect(try await TestProcess.waitUntilGone(pid), "service pid \(pid) is gone")
        }
    }

    static func becomesReady(port: Int, timeout: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/health/ready")
            if let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(2)), response.status == .ok { return true }
            try await Task.sleep(for: .milliseconds(200))
        }
        return false
    }
}
