import Hummingbird

/// Hummingbird's `TracingMiddleware` (a server span per request, continuing the caller's
/// `traceparent`) for everything but the operations endpoints: probes and scrapes every few
/// seconds would flood the traces with `/health/ready`. A no-op without a tracer.
public struct RequestTracingMiddleware<Context: RequestContext>: RouterMiddleware {
    private let tracing = TracingMiddleware<Context>()

    public init() {}

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        if path.hasPrefix("/health/") || path == "/metrics" || path == "/routes" { return try await next(request, context) }
        return try await tracing.handle(request, context: context, next: next)
    }
}
