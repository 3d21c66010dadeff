import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A closed-loop load generator: `concurrency` clients each repeat `operation` until the time is
/// up; reports throughput and latency percentiles of the successful calls.
public struct LoadRunner: Sendable {
    public struct Result: Sendable {
        public var ok = 0
        public var failed = 0
        public var seconds = 0.0
        public var latencies: [Double] = []

        public init() {}

        public var perSecond: Double { seconds > 0 ? Double(ok) / seconds : 0 }

        public func percentile(_ p: Double) -> Double {
            let sorted = latencies.sorted()
            return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }

        public func line(_ what: String, concurrency: Int) -> String {
            String(
                format: "%@: %d ok, %d failed in %.1f s = %.1f/s (concurrency %d); latency p50 %.2f ms  p90 %.2f ms  p99 %.2f ms",
                what, ok, failed, seconds, perSecond, concurrency, percentile(0.5), percentile(0.9), percentile(0.99))
        }
    }

    public let concurrency: Int
    public let duration: Duration

    public init(concurrency: Int, duration: Duration) {
        self.concurrency = concurrency
        self.duration = duration
    }

    /// `operation(client, iteration)` returns whether the call succeeded.
    public func run(_ operation: @escaping @Sendable (_ client: Int, _ iteration: Int) async throws -> Bool) async throws -> Result {
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

    public static func milliseconds(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }
}

/// JSON requests to the gateway with the contract's headers.
public struct GatewayClient: Sendable {
    public let base: String
    public let sesacKey: String
    /// The shared client keeps 8 connections per host; the load generator brings its own pool.
    public var http: HTTPClient

    public init(base: String, sesacKey: String, http: HTTPClient = .shared) {
        self.base = base
        self.sesacKey = sesacKey
        self.http = http
    }

    public func send(_ method: HTTPMethod, _ path: String, token: String? = nil, json: String? = nil) async throws -> (
        status: HTTPResponseStatus, body: ByteBuffer
    ) {
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

    public func json(_ buffer: ByteBuffer) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(buffer.readableBytesView))) as? [String: Any]
    }
}
