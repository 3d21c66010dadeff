import ChatFanoutApp
import Common
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import ServiceCatalog
import ServiceKit
import ServiceLifecycle
import SuiteTesting
import TestSupport
import Testing

/// One trace from a REST POST to the receiving socket, exported over OTLP/HTTP (JSON) by
/// swift-otel to a fake collector: the gateway's request span, chat's, chat-fanout's routing span
/// (the trace crossed chat's outbox and `chat.message.v1`) and the gateway's delivery span (it
/// crossed `gateway.delivery.v1`). Bootstraps tracing process-wide, so `scripts/test.sh` runs this
/// suite in a process of its own (after the others).
@Suite("Tracing across REST, the outbox, Kafka and the socket", .serialized)
struct TracingTests {
    static let fanout = StackService(.chatFanout, defaults: ChatFanoutService.defaults) { try await ChatFanoutApp.buildApplication(settings: $0, logger: $1) }

    /// Spans as the collector received them: trace id, span id, parent id (hex), name.
    struct ExportedSpan: Sendable, Equatable {
        let traceId: String
        let spanId: String
        let parentSpanId: String
        let name: String
    }

    @Test("a message posted with a traceparent: one trace, gateway → chat → outbox → chat-fanout → gateway delivery, each span the child of the one before")
    func oneTraceFromPostToSocket() async throws {
        let received = Locked<[ExportedSpan]>([])
        let router = Router()
        router.post("/v1/traces") { request, _ -> HTTPResponse.Status in
            let body = try await request.body.collect(upTo: 16 << 20)
            received.withLock { $0 += Self.spans(in: Data(body.readableBytesView)) }
            return .ok
        }
        let collectorPort = freePortRange(count: 1)
        let collector = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: collectorPort)), logger: TestDatabase.logger)
        let collectorTask = Task { try await collector.runService(gracefulShutdownSignals: []) }
        defer { collectorTask.cancel() }

        // As an operator would configure it (swift-otel reads the process environment).
        setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:\(collectorPort)", 1)
        setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", 1)
        setenv("OTEL_BSP_SCHEDULE_DELAY", "100", 1)
        // The test runs the exporter itself: handed to the process's first platform, it would stop
        // with whichever test (running in parallel) made that platform.
        let exporters = try Observability.bootstrap(service: "chatsuite-test", logFormat: .text, runsExportersItself: true)
        try #require(!exporters.isEmpty, "the OTLP exporters (this is the process's only tracing bootstrap)")
        let exporting = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for exporter in exporters { group.addTask { try await exporter.run() } }
                try await group.waitForAll()
            }
        }
        defer { exporting.cancel() }

        try await Stack.run(services: [.auth, .workspace, .chat, Self.fanout]) { s in
            let a = try await s.user("추적")
            let b = try await s.user("받는이")
            let (workspace, channel) = try await s.sharedChannel(a, b)
            let port = try #require(s.client.port)
            let (watcher, _) = try await NativeTestClient.connect(port, b)
            defer { Task { await watcher.kill() } }

            let traceId = UUIDv4Hex.random(bytes: 16)
            let clientSpan = UUIDv4Hex.random(bytes: 8)
            var headers = s.headers(token: a.token)
            headers[HTTPField.Name("traceparent")!] = "00-\(traceId)-\(clientSpan)-01"
            // Interest reaches the fan-out after a moment: posts until one arrives at b's socket.
            var attempts = 0
            try await eventually("a traced message reaches b's socket", timeout: .seconds(60)) {
                attempts += 1
                _ = try await s.request(
                    .post, "/v1/workspaces/\(workspace)/channels/\(channel)/chats", json: #"{"content":"traced \#(attempts)"}"#, headers: headers)
                try await Task.sleep(for: .milliseconds(300))
                return !watcher.dispatches("channel.message").isEmpty
            }
            do {
                try await eventually("the delivery span of the trace is exported", timeout: .seconds(30)) {
                    received.value.contains { $0.traceId == traceId && $0.name == "gateway deliver" }
                }
            } catch {
                Issue.record("trace \(traceId); exported: \(Set(received.value.map { "\($0.name) \($0.traceId.prefix(8))" }))")
                throw error
            }
            let trace = received.value.filter { $0.traceId == traceId }
            let byId = Dictionary(trace.map { ($0.spanId, $0) }, uniquingKeysWith: { first, _ in first })
            /// The names from `span` up to the root of the trace.
            func ancestry(_ span: ExportedSpan) -> [String] {
                var names = [span.name]
                var current = span
                while let parent = byId[current.parentSpanId] {
                    names.append(parent.name)
                    current = parent
                }
                return names
            }
            let deliveries = trace.filter { $0.name == "gateway deliver" }
            let chains = deliveries.map(ancestry)
            // gateway deliver ← chat-fanout route ← chat's request ← the proxy's client call ←
            // the gateway's request, whose parent is the client's span named in the traceparent.
            let expected = ["gateway deliver", "chat-fanout route", "/v1/workspaces/{workspace}/channels/{conversation}/chats", "POST", "/v1/**"]
            let complete = deliveries.filter { ancestry($0) == expected }
            #expect(!complete.isEmpty, "\(chains) of \(trace.map(\.name))")
            for delivery in complete {
                var root = delivery
                while let parent = byId[root.parentSpanId] { root = parent }
                #expect(root.parentSpanId == clientSpan, "the gateway's span continues the client's")
            }
        }
    }

    /// The spans of an OTLP/JSON export request (ids hex, or base64 as protobuf's JSON writes bytes).
    static func spans(in data: Data) -> [ExportedSpan] {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [] }
        var result: [ExportedSpan] = []
        for resource in object["resourceSpans"] as? [[String: Any]] ?? [] {
            for scope in resource["scopeSpans"] as? [[String: Any]] ?? [] {
                for span in scope["spans"] as? [[String: Any]] ?? [] {
                    result.append(
                        ExportedSpan(
                            traceId: hex(span["traceId"]), spanId: hex(span["spanId"]), parentSpanId: hex(span["parentSpanId"]),
                            name: span["name"] as? String ?? ""
                        ))
                }
            }
        }
        return result
    }

    static func hex(_ value: Any?) -> String {
        guard let text = value as? String, !text.isEmpty else { return "" }
        if text.count % 2 == 0, text.allSatisfy(\.isHexDigit), text.count == 32 || text.count == 16 { return text.lowercased() }
        guard let bytes = Data(base64Encoded: text) else { return text }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }
}

/// Random lower-case hex ids for a `traceparent`.
enum UUIDv4Hex {
    static func random(bytes: Int) -> String {
        (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}
