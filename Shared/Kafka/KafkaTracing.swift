import Instrumentation
import ServiceContextModule
import Tracing

/// W3C trace context (`traceparent`, `tracestate`) on Kafka records, so a trace continues from the
/// request that wrote an event through every consumer of it (the CloudEvents distributed-tracing
/// extension names the same attributes). Without a tracer (the default: tracing is opt-in) the
/// instrument is a no-op: nothing is written and nothing is read.
public enum KafkaTracing {
    public static let traceparent = "traceparent"
    public static let tracestate = "tracestate"

    /// The trace context of `context` (the current task's by default) as header values.
    public static func values(of context: ServiceContext? = .current) -> [String: String] {
        guard let context else { return [:] }
        var values: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &values, using: DictionaryInjector())
        return values.filter { $0.key == traceparent || $0.key == tracestate }
    }

    /// The trace context of `context` as Kafka headers (empty when there is none).
    public static func headers(of context: ServiceContext? = .current) -> [KafkaHeader] {
        values(of: context).sorted { $0.key < $1.key }.map { KafkaHeader(key: $0.key, string: $0.value) }
    }

    /// Whether a record's headers carry a trace (a `traceparent`): only such records get the
    /// spans of consumers that continue traces rather than start them.
    public static func carriesTrace(_ headers: [KafkaHeader]) -> Bool {
        headers.contains { $0.key == traceparent }
    }

    /// The context a record's headers carry (top-level when they carry none).
    public static func context(of headers: [KafkaHeader]) -> ServiceContext {
        var values: [String: String] = [:]
        for header in headers where header.key == traceparent || header.key == tracestate {
            if let value = header.value { values[header.key] = String(decoding: value, as: UTF8.self) }
        }
        var context = ServiceContext.topLevel
        if !values.isEmpty { InstrumentationSystem.instrument.extract(values, into: &context, using: DictionaryExtractor()) }
        return context
    }

    /// Runs `body` in a consumer span for `message`, a child of the trace its headers carry.
    public static func withConsumerSpan<T>(
        _ operation: String, message: KafkaConsumerMessage, _ body: (any Span) async throws -> T
    ) async rethrows -> T {
        try await withSpan(operation, context: context(of: message.headers), ofKind: .consumer) { span in
            describe(message, on: span)
            return try await body(span)
        }
    }

    /// `withConsumerSpan` for synchronous work.
    public static func withConsumerSpan<T>(_ operation: String, message: KafkaConsumerMessage, _ body: (any Span) throws -> T) rethrows -> T {
        try withSpan(operation, context: context(of: message.headers), ofKind: .consumer) { span in
            describe(message, on: span)
            return try body(span)
        }
    }

    /// OpenTelemetry's messaging attributes of a consumed record.
    public static func describe(_ message: KafkaConsumerMessage, on span: any Span) {
        guard span.isRecording else { return }
        span.attributes["messaging.system"] = "kafka"
        span.attributes["messaging.destination.name"] = message.topic
        span.attributes["messaging.kafka.destination.partition"] = Int(message.partition)
        span.attributes["messaging.kafka.message.offset"] = Int(message.offset)
    }
}

struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}

struct DictionaryExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}
