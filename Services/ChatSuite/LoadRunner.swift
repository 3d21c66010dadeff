import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A closed-loop load generator: `concurrency` clients each repeat `operation` until the time is
/// up; reports throughput and latency percentiles of the successful calls.
struct LoadRunner {
    struct Result {
        var ok = 0
        var failed = 0
        var seconds = 0.0
        var latencies: [Double] = []

        var perSecond: Double { seconds > 0 ? Double(ok) / seconds : 0 }

        func percentile(_ p: Double) -> Double {
            let sorted = latencies.sorted()
            return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }

        func line(_ what: String, concurrency: Int) -> String {
            String(format: "%@: %d ok, %d failed in %.1f s = %.1f/s (concurrency %d); latency p50 %.2f ms  p90 %.2f ms  p99 %.2f ms",
                   what, ok, failed, seconds, perSecond, concurrency, percentile(0.5), percentile(0.9), percentile(0.99))
        }
    }

    let concurrency: Int
    let duration: Duration

    /// `operation(client, iteration)` returns whether the call succeeded.
    func run(_ operation: @escaping @Sendable (_ client: Int, _ iteration: Int) async throws -> Bool) async throws -> Result {
        let deadline = ContinuousClock.now + duration
        let started = ContinuousClock.now
        var total = try await withThrowingTaskGroup(of: Result.self) { group in
            for client in 0..<concurrency {
                group.addTask {
                    var r = Result()
                    var iteration = 0
                    while ContinuousClock.now < deadline {
                        let t0 = ContinuousClock.now
                        let ok = try await operation(client, iteration)
                        iteration += 1
                        if ok { r.ok += 1; r.latencies.append(Self.milliseconds(ContinuousClock.now - t0)) } else { r.failed += 1 }
                    }
                    return r
                }
            }
            var total = Result()
            for try await r in group {
                total.ok += r.ok
                total.failed += r.failed
                total.latencies += r.latencies
            }
            return total
        }
        total.seconds = Self.milliseconds(ContinuousClock.now - started) / 1000
        return total
    }

    static func milliseconds(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }
}

/// JSON requests to the gateway with the contract's headers.
struct GatewayClient: Sendable {
    let base: String
    let sesacKey: String
    /// The shared client keeps 8 connections per host; the load generator brings its own pool.
    var http: HTTPClient = .shared

    func send(_ method: HTTPMethod, _ path: String, token: String? = nil, json: String? = nil) async throws -> (status: HTTPResponseStatus, body: ByteBuffer) {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        request.headers.add(name: "SesacKey", value: sesacKey)
        if let token { request.headers.add(name: "Authorization", value: token) }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        let response = try await http.execute(request, timeout: .seconds(30))
        return (response.status, try await response.body.collect(upTo: 8 << 20))
    }

    func json(_ buffer: ByteBuffer) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(buffer.readableBytesView))) as? [String: Any]
    }
}

/// The options every gateway benchmark takes.
struct GatewayLoadOptions: ParsableArguments {
    @Option(help: "Gateway base URL.")
    var gateway: String = "http://127.0.0.1:8080"

    @Option(help: "SesacKey header value.")
    var sesacKey: String = "dev-key"

    @Option(help: "Concurrent clients.")
    var concurrency: Int = 8

    @Option(help: "Duration of each phase in seconds.")
    var seconds: Int = 10

    var client: GatewayClient { GatewayClient(base: gateway, sesacKey: sesacKey) }
    var runner: LoadRunner { LoadRunner(concurrency: concurrency, duration: .seconds(seconds)) }
}
