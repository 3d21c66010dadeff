import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import Synchronization

/// Process-wide logging and metrics bootstrap (each may happen once per process).
public enum Observability {
    /// How log lines are written (`log.format`).
    public enum LogFormat: String, Sendable, CaseIterable {
        /// swift-log's stream handler: readable in a terminal.
        case text
        /// One JSON object per line with millisecond timestamps (`JSONLogHandler`).
        case json
    }

    /// The registry `/metrics` renders; every swift-metrics metric of the process lands here,
    /// named by Prometheus' conventions (`ConventionalMetricNames`).
    public static let registry = PrometheusCollectorRegistry()

    private static func prometheus() -> any MetricsFactory {
        var prometheus = PrometheusMetricsFactory(registry: registry)
        prometheus.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
        ]
        return ConventionalMetricNames(prometheus)
    }

    private static let state = Mutex<(metrics: Bool, logging: Bool, services: [any Service])>((false, false, []))

    /// The OpenTelemetry exporters made by `bootstrap` (none unless `OTEL_*` asks for them), handed
    /// out once: the process's platform runs them first and stops them last.
    public static func takeBackgroundServices() -> [any Service] {
        state.withLock { state in
            defer { state.services = [] }
            return state.services
        }
    }

    /// Bootstraps the metrics backend only (tests that read `/metrics`; idempotent).
    public static func bootstrapMetrics() {
        let first = state.withLock { state in
            defer { state.metrics = true }
            return !state.metrics
        }
        if first { MetricsSystem.bootstrap(prometheus()) }
    }

    /// Bootstraps metrics (Prometheus, plus OTLP when asked), tracing (OTLP when asked) and
    /// logging in `format` (plus OTLP when asked), once per process: later calls change nothing.
    /// - Parameters:
    ///   - service: the OpenTelemetry service name unless `OTEL_SERVICE_NAME` sets one.
    ///   - runsExportersItself: the exporters are returned to the caller, which runs them, instead
    ///     of going to the process's first `ServicePlatform` (a test process, where many platforms
    ///     come and go, would otherwise stop exporting when that platform's test ends).
    /// - Returns: the exporters when `runsExportersItself` and this call bootstrapped, else none.
    /// The `OTEL_*` variables are read from the process environment (swift-otel reads them there).
    @discardableResult
    public static func bootstrap(service: String = "chatsuite", logFormat: LogFormat = .text, runsExportersItself: Bool = false) throws
        -> [any Service]
    {
        let first = state.withLock { state in
            defer { state.logging = true }
            return !state.logging
        }
        guard first else { return [] }
        let otel = try OpenTelemetry.make(service: service, environment: ProcessInfo.processInfo.environment)
        if !runsExportersItself { state.withLock { $0.services = otel.services } }
        let metricsFirst = state.withLock { state in
            defer { state.metrics = true }
            return !state.metrics
        }
        if metricsFirst {
            MetricsSystem.bootstrap(otel.metrics.map { MultiplexMetricsHandler(factories: [prometheus(), $0]) } ?? prometheus())
        }
        let exported = otel.logs
        LoggingSystem.bootstrap(
            { label, provider in
                let local: any LogHandler
                switch logFormat {
                case .text:
                    var handler = StreamLogHandler.standardError(label: label, metadataProvider: provider)
                    handler.logLevel = .info
                    local = handler
                case .json:
                    local = JSONLogHandler(label: label, metadataProvider: provider)
                }
                guard let exported else { return local }
                return MultiplexLogHandler([local, exported(label)])
            }, metadataProvider: otel.traceMetadata)
        return runsExportersItself ? otel.services : []
    }

    /// The service's root logger: carries `service` metadata and the configured level.
    public static func logger(service: String, level: Logger.Level) -> Logger {
        var logger = Logger(label: service)
        logger.logLevel = level
        logger[metadataKey: LogKey.service] = .string(service)
        return logger
    }

    /// Prometheus text exposition of everything registered, then the process metrics.
    public static func renderMetrics() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        buffer.append(contentsOf: ProcessMetrics.render().utf8)
        return buffer
    }
}

/// Metadata keys, in one place so dashboards and greps agree.
public enum LogKey {
    public static let service = "service"
    public static let requestId = "request.id"
    public static let userId = "user.id"
    public static let eventId = "event.id"
    public static let error = "error"
    public static let errorType = "error.type"
    public static let kafkaTopic = "kafka.topic"
    public static let kafkaPartition = "kafka.partition"
    public static let kafkaOffset = "kafka.offset"
    public static let count = "count"
    public static let gatewayId = "gateway.id"
    public static let conversationId = "conversation.id"
}
