import ArgumentParser
import AsyncHTTPClient
import Common
import Foundation
import NIOCore
import NIOHTTP1

/// `chatsuite bench login`: joins one user, then logs in from `--concurrency` clients for
/// `--seconds` through the gateway and reports logins/s and latency percentiles.
struct LoginBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "login", abstract: "Email logins per second through a running gateway.")

    @Option(help: "Gateway base URL.")
    var gateway: String = "http://127.0.0.1:8080"

    @Option(help: "SesacKey header value.")
    var sesacKey: String = "dev-key"

    @Option(help: "Concurrent clients.")
    var concurrency: Int = 8

    @Option(help: "Duration in seconds.")
    var seconds: Int = 10

    func run() async throws {
        let email = "bench-\(UUID().uuidString.prefix(8).lowercased())@example.com"
        let password = "bench password 1"
        let join = try await post("/v1/users/join", #"{"email":"\#(email)","password":"\#(password)","nickname":"bench"}"#)
        guard join.status == .ok else { throw ValidationError("join failed with HTTP \(join.status.code)") }
        let body = #"{"email":"\#(email)","password":"\#(password)"}"#
        let deadline = ContinuousClock.now + .seconds(seconds)
        let started = ContinuousClock.now
        let results = try await withThrowingTaskGroup(of: (ok: Int, failed: Int, latencies: [Double]).self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var ok = 0, failed = 0
                    var latencies: [Double] = []
                    while ContinuousClock.now < deadline {
                        let t0 = ContinuousClock.now
                        let response = try await post("/v1/users/login", body)
                        let elapsed = ContinuousClock.now - t0
                        latencies.append(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
                        if response.status == .ok { ok += 1 } else { failed += 1 }
                    }
                    return (ok, failed, latencies)
                }
            }
            var total = (ok: 0, failed: 0, latencies: [Double]())
            for try await r in group {
                total.ok += r.ok
                total.failed += r.failed
                total.latencies += r.latencies
            }
            return total
        }
        let elapsed = ContinuousClock.now - started
        let secs = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let sorted = results.latencies.sorted()
        func pct(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        print(String(format: "logins: %d ok, %d failed in %.1f s = %.1f logins/s (concurrency %d); latency p50 %.1f ms  p99 %.1f ms",
                     results.ok, results.failed, secs, Double(results.ok) / secs, concurrency, pct(0.5), pct(0.99)))
    }

    private func post(_ path: String, _ json: String) async throws -> HTTPClientResponse {
        var request = HTTPClientRequest(url: gateway + path)
        request.method = .POST
        request.headers.add(name: "SesacKey", value: sesacKey)
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: json))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 1 << 20)
        return response
    }
}
