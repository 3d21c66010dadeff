import Dispatch
import HTTPTypes
import Hummingbird
import Metrics
import Synchronization

/// Request metrics with OpenTelemetry's HTTP semantic conventions in Prometheus' naming:
/// `http_server_requests_total` and `http_server_request_duration_seconds` by
/// `http_route`, `http_request_method`, `http_response_status_code`, and
/// `http_server_active_requests` by method. The route label is a bounded pattern: the router's
/// matched path (`/v1/workspaces/{workspace}`), or what `routeLabel` says for a catch-all route
/// (the gateway labels its proxy by the route table's pattern instead of `/v1/**`).
public struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    public typealias RouteLabel = @Sendable (Request, Context) -> String?
    private let routeLabel: RouteLabel?
    private let cache = RequestMetricsCache()

    public init(routeLabel: RouteLabel? = nil) {
        self.routeLabel = routeLabel
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = DispatchTime.now().uptimeNanoseconds
        let active = cache.active(request.method)
        active.increment()
        let route = routeLabel?(request, context) ?? context.endpointPath ?? "unmatched"
        do {
            var response = try await next(request, context)
            let status = response.status
            // Recorded once the body is written (or failed), as Hummingbird's own middleware does.
            let body = response.body
            let cache = self.cache
            response.body = ResponseBody(contentLength: body.contentLength) { writer in
                defer {
                    let metrics = cache.endpoint(route: route, method: request.method, status: status)
                    metrics.requests.increment()
                    metrics.duration.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - start))
                    active.decrement()
                }
                try await body.write(writer)
            }
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            let metrics = cache.endpoint(route: route, method: request.method, status: status)
            metrics.requests.increment()
            metrics.duration.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - start))
            active.decrement()
            throw error
        }
    }
}

/// The metric handles per (route, method, status), made once: a lookup here is cheaper than the
/// factory's registry lookup on every request.
final class RequestMetricsCache: Sendable {
    struct Key: Hashable {
        let route: String
        let method: HTTPRequest.Method
        let status: Int
    }

    struct Endpoint: Sendable {
        let requests: Counter
        let duration: Timer
    }

    private let endpoints = Mutex<[Key: Endpoint]>([:])
    private let meters = Mutex<[HTTPRequest.Method: Meter]>([:])

    func active(_ method: HTTPRequest.Method) -> Meter {
        meters.withLock { meters in
            if let meter = meters[method] { return meter }
            let meter = Meter(label: "http_server_active_requests", dimensions: [("http_request_method", method.rawValue)])
            meters[method] = meter
            return meter
        }
    }

    func endpoint(route: String, method: HTTPRequest.Method, status: HTTPResponse.Status) -> Endpoint {
        let key = Key(route: route, method: method, status: status.code)
        return endpoints.withLock { endpoints in
            if let endpoint = endpoints[key] { return endpoint }
            let dimensions = [("http_route", route), ("http_request_method", method.rawValue), ("http_response_status_code", String(status.code))]
            let endpoint = Endpoint(
                requests: Counter(label: "http_server_requests_total", dimensions: dimensions),
                duration: Timer(label: "http_server_request_duration_seconds", dimensions: dimensions, preferredDisplayUnit: .seconds)
            )
            endpoints[key] = endpoint
            return endpoint
        }
    }
}
