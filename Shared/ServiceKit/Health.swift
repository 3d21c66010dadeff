import Common
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

/// Readiness: the process is up (`/health/live`) and its dependencies answer (`/health/ready`).
/// Checks run at most once per `cacheInterval` however often probes come, each with a timeout.
public final class HealthChecks: Sendable {
    public typealias Check = @Sendable () async throws -> Void

    private let checks: [(name: String, check: Check)]
    private let startup: StartupGate
    private let cacheInterval: Duration
    private let timeout: Duration
    private let cache = Mutex<(at: ContinuousClock.Instant, result: [String: String])?>(nil)

    public init(startup: StartupGate, checks: [(name: String, check: Check)], cacheInterval: Duration = .seconds(1), timeout: Duration = .seconds(2)) {
        self.startup = startup
        self.checks = checks
        self.cacheInterval = cacheInterval
        self.timeout = timeout
    }

    /// Component → "ok" or the failure; empty checks plus an open startup gate = ready.
    public func evaluate() async -> (ready: Bool, components: [String: String]) {
        guard startup.isOpen else { return (false, ["startup": "in progress"]) }
        if let cached = cache.withLock({ $0 }), ContinuousClock.now - cached.at < cacheInterval {
            return (cached.result.values.allSatisfy { $0 == "ok" }, cached.result)
        }
        let timeout = self.timeout
        let result = await withTaskGroup(of: (String, String).self) { group in
            for (name, check) in checks {
                group.addTask {
                    do {
                        try await withTimeout(timeout, name) { try await check() }
                        return (name, "ok")
                    } catch {
                        return (name, "\(error)")
                    }
                }
            }
            var out: [String: String] = [:]
            for await (name, status) in group { out[name] = status }
            return out
        }
        cache.withLock { $0 = (ContinuousClock.now, result) }
        return (result.values.allSatisfy { $0 == "ok" }, result)
    }

    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        router.get("/health/live") { _, _ in
            Self.json(status: .ok, ["status": "ok"])
        }
        router.get("/health/ready") { _, _ in
            let (ready, components) = await self.evaluate()
            var body = components
            body["status"] = ready ? "ok" : "unavailable"
            return Self.json(status: ready ? .ok : .serviceUnavailable, body)
        }
        router.get("/metrics") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: Observability.renderMetrics())))
        }
    }

    static func json(status: HTTPResponse.Status, _ object: [String: String]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Opens once, when the service finished starting (migrations applied, topics present).
/// Consumers wait on it before consuming; readiness reports "starting" until then.
public typealias StartupGate = Latch
