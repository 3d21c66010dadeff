import AsyncHTTPClient
import InMemoryTracing
import OutboundHTTP
import Testing
import Tracing

/// `HTTPClient.Configuration.traceOnlyWithATracer`: with no tracer bootstrapped the gateway's
/// proxy opens no span per request; with one, its spans carry the trace upstream as before
/// (`TracingTests`, end to end).
@Suite("Outbound clients trace only with a tracer")
struct ClientTracingTests {
    @Test("the no-op tracer (none bootstrapped) is dropped; a real tracer is kept")
    func noOpTracerDropped() {
        var none = HTTPClient.Configuration()
        none.tracing.tracer = NoOpTracer()
        none.traceOnlyWithATracer()
        #expect(none.tracing.tracer == nil)

        var traced = HTTPClient.Configuration()
        traced.tracing.tracer = InMemoryTracer()
        traced.traceOnlyWithATracer()
        #expect(traced.tracing.tracer is InMemoryTracer)
    }
}
