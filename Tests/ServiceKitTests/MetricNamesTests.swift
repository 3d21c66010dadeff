import CoreMetrics
import Prometheus
import ServiceKit
import Testing

@Suite("Metric names follow Prometheus' conventions whoever emits them")
struct MetricNamesTests {
    @Test("dots become underscores, counters end in _total, timers in _seconds, once")
    func conventions() {
        let registry = PrometheusCollectorRegistry()
        let factory = ConventionalMetricNames(PrometheusMetricsFactory(registry: registry))
        Counter(label: "hb.requests", dimensions: [("http.route", "/v1/x")], factory: factory).increment()
        Counter(label: "outbox_published_total", factory: factory).increment()
        Timer(label: "http.server.request.duration", dimensions: [("http.request.method", "GET")], factory: factory).recordNanoseconds(1_000_000)
        Timer(label: "push_commit_to_provider_seconds", factory: factory).recordNanoseconds(5)
        Gauge(label: "kafka-consumer.lag", factory: factory).record(3)
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        let text = String(decoding: buffer, as: UTF8.self)
        #expect(text.contains("# TYPE hb_requests_total counter"))
        #expect(text.contains(#"hb_requests_total{http_route="/v1/x"} 1"#))
        #expect(text.contains("# TYPE outbox_published_total counter"))
        #expect(!text.contains("_total_total"))
        #expect(text.contains("# TYPE http_server_request_duration_seconds histogram"))
        #expect(text.contains(#"http_request_method="GET""#))
        #expect(text.contains("# TYPE push_commit_to_provider_seconds histogram"))
        #expect(!text.contains("_seconds_seconds"))
        #expect(text.contains("kafka_consumer_lag 3"))
        #expect(ConventionalMetricNames.sanitized("9lives") == "_9lives")
    }
}
