import Instrumentation
import Logging
import Metrics
import OTel
import ServiceLifecycle
import Synchronization
import Tracing

/// Opt-in OpenTelemetry export over OTLP/HTTP (swift-otel), configured by the standard `OTEL_*`
/// variables. Off unless an OTLP endpoint is named (`OTEL_EXPORTER_OTLP_ENDPOINT`, or a signal's
/// own `OTEL_EXPORTER_OTLP_{TRACES,METRICS,LOGS}_ENDPOINT`) and `OTEL_SDK_DISABLED` is not `true`.
/// Then traces are exported (`OTEL_TRACES_EXPORTER=none` turns them off); metrics and logs only
/// when `OTEL_METRICS_EXPORTER` / `OTEL_LOGS_EXPORTER` say `otlp` — Prometheus (`/metrics`) and
/// stderr stay on in every case. `OTEL_SERVICE_NAME` defaults to the executable's name;
/// `OTEL_EXPORTER_OTLP_PROTOCOL` is `http/protobuf` (default) or `http/json`.
enum OpenTelemetry {
    struct Selection: Equatable {
        var traces = false
        var metrics = false
        var logs = false
        var any: Bool { traces || metrics || logs }
    }

    static func selection(_ environment: [String: String]) -> Selection {
        guard environment["OTEL_SDK_DISABLED"]?.lowercased() != "true" else { return Selection() }
        func named(_ key: String) -> Bool { !(environment[key] ?? "").isEmpty }
        let common = named("OTEL_EXPORTER_OTLP_ENDPOINT")
        func exporter(_ signal: String) -> String? { environment["OTEL_\(signal)_EXPORTER"]?.lowercased() }
        return Selection(
            traces: (common || named("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) && exporter("TRACES") != "none",
            metrics: (common || named("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")) && exporter("METRICS") == "otlp",
            logs: (common || named("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT")) && exporter("LOGS") == "otlp"
        )
    }

    /// What the bootstrap made: the exporters' services (run by the platform's service group) and
    /// the backends to multiplex with the suite's own.
    struct Backends {
        var services: [any Service] = []
        var metrics: (any MetricsFactory)?
        var logs: (@Sendable (String) -> any LogHandler)?
        /// `trace_id` / `span_id` of the current span on every log line, when tracing is on.
        var traceMetadata: Logger.MetadataProvider?
    }

    /// Bootstraps the tracer (process-wide) and makes the metrics and log backends selected.
    static func make(service: String, environment: [String: String]) throws -> Backends {
        let selection = selection(environment)
        var backends = Backends()
        guard selection.any else { return backends }
        var configuration = OTel.Configuration.default
        configuration.serviceName = environment["OTEL_SERVICE_NAME"] ?? service
        configuration.traces.enabled = selection.traces
        configuration.metrics.enabled = selection.metrics
        configuration.logs.enabled = selection.logs
        if selection.traces {
            let (tracer, exporter) = try OTel.makeTracingBackend(configuration: configuration)
            InstrumentationSystem.bootstrap(tracer)
            backends.services.append(exporter)
            backends.traceMetadata = OTel.makeLoggingMetadataProvider()
        }
        if selection.metrics {
            let (factory, exporter) = try OTel.makeMetricsBackend(configuration: configuration)
            backends.metrics = factory
            backends.services.append(exporter)
        }
        if selection.logs {
            let (factory, exporter) = try OTel.makeLoggingBackend(configuration: configuration)
            backends.logs = factory
            backends.services.append(exporter)
        }
        return backends
    }
}
