import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import ServiceKit
import SuiteTesting
import Testing

/// The gateway's operations endpoints: health and metrics on the admin listener only, and the
/// metrics named as Prometheus expects, with the proxy's requests labelled by their route.
@Suite("Gateway admin listener and metrics")
struct OperationsEndpointsTests {
    @Test("health and /metrics answer on the admin port, not on the public one; metric names follow the conventions; routes are labelled by pattern")
    func adminListener() async throws {
        Observability.bootstrapMetrics()
        try await Stack.run(services: [.auth, .workspace]) { s in
            // The public port: neither health nor metrics.
            for path in ["/health/live", "/health/ready", "/metrics"] {
                #expect(try await s.client.execute(uri: path, method: .get, headers: [:], body: nil).status == .notFound, "\(path)")
            }
            let owner = try await s.user("관리")
            let workspace = try await s.createWorkspace(owner)
            let id = try #require(workspace["workspace_id"] as? String)
            #expect(try await s.get("/v1/workspaces/\(id)", owner).status == .ok)

            let admin = "http://127.0.0.1:\(s.gatewayAdminPort)"
            #expect(try await HTTPClient.shared.execute(HTTPClientRequest(url: "\(admin)/health/live"), timeout: .seconds(5)).status == .ok)
            #expect(try await HTTPClient.shared.execute(HTTPClientRequest(url: "\(admin)/health/ready"), timeout: .seconds(5)).status == .ok)
            let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "\(admin)/metrics"), timeout: .seconds(5))
            #expect(response.status == .ok)
            let text = String(buffer: try await response.body.collect(upTo: 16 << 20))
            let exposition = MetricsExposition(text)

            // Names: Prometheus' character set; counters end in _total, durations in _seconds.
            #expect(!exposition.types.isEmpty)
            for (name, type) in exposition.types {
                #expect(name.range(of: "^[a-zA-Z_:][a-zA-Z0-9_:]*$", options: .regularExpression) != nil, "\(name)")
                if type == "counter" { #expect(name.hasSuffix("_total"), "counter \(name)") }
                if type == "histogram" && name.contains("duration") { #expect(name.hasSuffix("_seconds"), "histogram \(name)") }
            }
            // The proxied GET is labelled by the API document's path template, never the catch-all.
            #expect(
                text.contains(#"http_server_requests_total{http_route="/v1/workspaces/{workspace}",http_request_method="GET",http_response_status_code="200"}"#)
            )
            #expect(!text.contains(#"http_route="/v1/**""#))
            // Process, consumer lag and outbox gauges are there.
            for name in ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "kafka_consumer_lag", "outbox_backlog"] {
                #expect(exposition.types[name] != nil, "\(name) is exposed")
            }
        }
    }
}

/// The `# TYPE` lines of a Prometheus text exposition.
struct MetricsExposition {
    let types: [String: String]

    init(_ text: String) {
        var types: [String: String] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let parts = line.split(separator: " ")
            if parts.count == 4 { types[String(parts[2])] = String(parts[3]) }
        }
        self.types = types
        self.text = text
    }

    let text: String

    /// The value of the sample named exactly `sample` (with its labels, if any); nil if absent.
    func value(_ sample: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(sample + " ") }.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
    }
}
