import AsyncHTTPClient
import Common
import Foundation
import ServiceCatalog
import NIOCore
import NIOHTTP1
import Testing
import TestSupport

@Suite("chatsuite dev: the whole suite on the embedded defaults", .serialized)
struct DevStackTests {
    /// The pids the launcher's "started: …" line names.
    static func startedPids(_ output: String) throws -> [Int32] {
        let startedLine = try #require(output.split(separator: "\n").first { $0.hasPrefix("started: ") })
        return startedLine.matches(of: /pid (\d+)/).compactMap { Int32($0.output.1) }
    }

    /// A running process's environment, `NAME=value` each.
    static func environment(of pid: Int32) throws -> Set<String> {
        let environ = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))
        return Set(environ.split(separator: 0).map { String(decoding: $0, as: UTF8.self) })
    }

    @Test("on librdkafka's mock (--embedded-engine mock) every service gets the 5 ms fetch wait the mock needs")
    func mockEngineKeepsShortFetchWait() async throws {
        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("chatsuite-dev-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dataDir) }
        let basePort = freePortRange(count: ServiceEntry.portSpan + 1, alsoAt: [ServiceEntry.adminPortOffset])
        let launcher = try TestProcess(
            executable: "chatsuite",
            arguments: [
                "dev", "--data-dir", dataDir.path, "--port", String(basePort), "--postgres-port", String(basePort + ServiceEntry.portSpan),
                "--log-level", "warning", "--embedded-engine", "mock",
            ], environment: ["DATABASE_URL": ""])
        let output = try await launcher.waitForOutput("chatsuite is ready", timeout: .seconds(180))
        let pids = try Self.startedPids(output)
        #expect(pids.count == ServiceEntry.all.count)
        for pid in pids {
            #expect(try Self.environment(of: pid).contains("KAFKA_FETCH_WAIT_MS=5"), "pid \(pid)")
        }
        launcher.signal(SIGINT)
        #expect(try await launcher.waitForExit(timeout: .seconds(60)) == 0)
    }

    @Test("from an empty data folder every executable of the catalog reports ready, and SIGINT leaves no process behind")
    func devStackStartsAndStopsCleanly() async throws {
        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("chatsuite-dev-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dataDir) }
        let basePort = freePortRange(count: ServiceEntry.portSpan + 1, alsoAt: [ServiceEntry.adminPortOffset])
        let pgPort = basePort + ServiceEntry.portSpan  // after every service
        var env: [String: String] = [:]
        env["DATABASE_URL"] = ""  // use a local cluster, not an inherited server
        env["MEMORY_TRIM_INTERVAL_SECONDS"] = "1"  // every executable trims its heap (checked below)
        let launcher = try TestProcess(
            executable: "chatsuite",
            arguments: [
                "dev", "--data-dir", dataDir.path, "--port", String(basePort), "--postgres-port", String(pgPort), "--log-level", "warning",
            ], environment: env)
        let started = ContinuousClock.now
        let output = try await launcher.waitForOutput("chatsuite is ready", timeout: .seconds(180))
        let startup = ContinuousClock.now - started
        print("dev stack ready in \(startup) (clean data folder, including initdb)")
        #expect(output.contains("gateway: http://127.0.0.1:\(basePort)"))
        #expect(output.contains("SesacKey: dev-key"))

        for service in ServiceEntry.all {
            let port = service.healthPort(httpPort: basePort + service.port - ServiceEntry.gatewayPort)
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/health/ready"), timeout: .seconds(5))
            _ = try await response.body.collect(upTo: 1 << 20)
            #expect(response.status == .ok, "\(service) is ready (port \(port))")
        }
        // Every executable hands its free heap back (`MemoryTrim`, part of every service's platform).
        for service in ServiceEntry.all {
            let port = service.healthPort(httpPort: basePort + service.port - ServiceEntry.gatewayPort)
            var trims = 0.0
            let deadline = ContinuousClock.now + .seconds(30)
            while trims < 1, ContinuousClock.now < deadline {
                let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"), timeout: .seconds(5))
                let body = String(buffer: try await response.body.collect(upTo: 16 << 20))
                let line = body.split(separator: "\n").first { $0.hasPrefix("memory_trims_total ") }
                trims = line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) } ?? 0
                if trims < 1 { try await Task.sleep(for: .milliseconds(200)) }
            }
            #expect(trims >= 1, "\(service) trimmed its heap (memory_trims_total on port \(port))")
        }
        // The gateway's public port serves neither health nor metrics; its admin listener does.
        for path in ["/health/ready", "/health/live", "/metrics"] {
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(basePort)\(path)"), timeout: .seconds(5))
            _ = try await response.body.collect(upTo: 1 << 20)
            #expect(response.status == .notFound, "\(path) on the public port: \(response.status)")
        }
        let metrics = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(ServiceEntry.gateway.healthPort(httpPort: basePort))/metrics"), timeout: .seconds(5))
        // Read every body: an unread one holds its connection (and the gateway's graceful stop) open.
        _ = try await metrics.body.collect(upTo: 16 << 20)
        #expect(metrics.status == .ok)

        // The pids the launcher started.
        let pids = try Self.startedPids(output)
        #expect(pids.count == ServiceEntry.all.count)
        // What the launcher gives every service for the embedded broker (docs/configuration.md):
        // no compression (loopback), and on the Swift broker (the default engine) the default fetch
        // wait: it answers a fetch when data arrives, so the wait only bounds idle polling (the
        // mock's short wait: `mockEngineKeepsShortFetchWait`).
        for pid in pids {
            let variables = try Self.environment(of: pid)
            #expect(variables.contains("KAFKA_COMPRESSION=none"), "pid \(pid)")
            #expect(!variables.contains { $0.hasPrefix("KAFKA_FETCH_WAIT_MS=") }, "pid \(pid)")
        }
        let postmasterPid = try String(contentsOf: dataDir.appendingPathComponent("postgres/postmaster.pid"), encoding: .utf8)
            .split(separator: "\n").first.flatMap { Int32($0) }

        launcher.signal(SIGINT)
        let status = try await launcher.waitForExit(timeout: .seconds(60))
        #expect(status == 0, "launcher exits cleanly:\n\(launcher.output.suffix(2000))")
        #expect(!launcher.output.contains("did not stop in time"), "every service shut down gracefully:\n\(launcher.output.suffix(2000))")
        for pid in pids {
            #expect(!TestProcess.exists(pid), "service pid \(pid) is gone")
        }
        if let postmasterPid {
            #expect(try await TestProcess.waitUntilGone(postmasterPid), "the PostgreSQL server the launcher started is stopped")
        }
        #expect(!FileManager.default.fileExists(atPath: dataDir.appendingPathComponent("postgres/postmaster.pid").path))
    }

    @Test("a launcher killed with SIGKILL (no chance to clean up) still leaves no service behind")
    func servicesFollowAKilledLauncher() async throws {
        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("chatsuite-kill-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dataDir) }
        let basePort = freePortRange(count: ServiceEntry.portSpan + 1, alsoAt: [ServiceEntry.adminPortOffset])
        let pgPort = basePort + ServiceEntry.portSpan  // after every service
        let launcher = try TestProcess(
            executable: "chatsuite",
            arguments: [
                "dev", "--data-dir", dataDir.path, "--port", String(basePort), "--postgres-port", String(pgPort), "--log-level", "warning",
            ], environment: ["DATABASE_URL": ""])
        let output = try await launcher.waitForOutput("chatsuite is ready", timeout: .seconds(180))
        let startedLine = try #require(output.split(separator: "\n").first { $0.hasPrefix("started: ") })
        let pids = startedLine.matches(of: /pid (\d+)/).compactMap { Int32($0.output.1) }
        #expect(pids.count == ServiceEntry.all.count)
        launcher.signal(SIGKILL)
        _ = try await launcher.waitForExit(timeout: .seconds(10))
        for pid in pids {
            #expect(try await TestProcess.waitUntilGone(pid, timeout: .seconds(15)), "service pid \(pid) exits once its launcher is gone")
        }
        // The PostgreSQL server outlives a SIGKILLed launcher by design (it holds data); stop it.
        let stop = try TestProcess(executable: "chatsuite", arguments: ["postgres", "stop", "--data-dir", dataDir.path, "--port", String(pgPort)])
        #expect(try await stop.waitForExit(timeout: .seconds(30)) == 0)
    }
}
