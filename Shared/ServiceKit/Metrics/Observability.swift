import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus
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

    private static let metricsOnce: Void = {
        var prometheus = PrometheusMetricsFactory(registry: registry)
        prometheus.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
        ]
        MetricsSystem.bootstrap(ConventionalMetricNames(prometheus))
    }()

    private static let loggingOnce = Mutex<Bool>(false)

    /// Bootstraps the metrics backend only (tests that read `/metrics`; idempotent).
    public static func bootstrapMetrics() {
        _ = metricsOnce
    }

    /// Bootstraps metrics, and logging in `format` (the first call's format wins).
    public static func bootstrap(logFormat: LogFormat = .text, metadataProvider: Logger.MetadataProvider? = nil) {
        _ = metricsOnce
        let first = loggingOnce.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        switch logFormat {
        case .text:
            LoggingSystem.bootstrap(
                { label, provider in
                    var handler = StreamLogHandler.standardError(label: label, metadataProvider: provider)
                    handler.logLevel = .info
                    return handler
                }, metadataProvider: metadataProvider)
        case .json:
            LoggingSystem.bootstrap({ label, provider in JSONLogHandler(label: label, metadataProvider: provider) }, metadataProvider: metadataProvider)
        }
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
