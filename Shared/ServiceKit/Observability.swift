import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus

/// Process-wide logging and metrics bootstrap (each may happen once per process).
public enum Observability {
    /// The registry `/metrics` renders; every swift-metrics metric of the process lands here.
    public static let registry = PrometheusCollectorRegistry()

    private static let metricsOnce: Void = {
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
    }()

    private static let loggingOnce: Void = {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .info
            return handler
        }
    }()

    public static func bootstrap() {
        _ = metricsOnce
        _ = loggingOnce
    }

    /// The service's root logger: carries `service` metadata and the configured level.
    public static func logger(service: String, level: Logger.Level) -> Logger {
        var logger = Logger(label: service)
        logger.logLevel = level
        logger[metadataKey: LogKey.service] = .string(service)
        return logger
    }

    /// Prometheus text exposition of everything registered.
    public static func renderMetrics() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
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
