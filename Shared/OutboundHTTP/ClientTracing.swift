import AsyncHTTPClient
import Tracing

extension HTTPClient.Configuration {
    /// Client spans only with a tracer bootstrapped (OpenTelemetry on: `OTEL_EXPORTER_OTLP_*`).
    /// AsyncHTTPClient takes the process's tracer when the configuration is made, and with none
    /// bootstrapped that is a `NoOpTracer`: every request still opened a span that records nothing
    /// and set its attributes, 1.5 % of the gateway's CPU on the REST path (docs/benchmarks.md,
    /// part 36). With a tracer bootstrapped this changes nothing: the client's span carries the
    /// trace context upstream as before.
    public mutating func traceOnlyWithATracer() {
        if tracing.tracer is NoOpTracer { tracing.tracer = nil }
    }
}
