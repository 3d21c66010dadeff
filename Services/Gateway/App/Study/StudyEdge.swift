import HTTPTypes
import Hummingbird
import ServiceKit

/// The edge of the study app's REST surface (client contract §3, docs/study-api.md): its paths
/// `/v1/user…`, `/v1/queue…` and `/v1/chat/…` go to the `study` service's `/study/v1/…` routes.
/// The app sends no `SesacKey` and no suite token (the service checks its Firebase `idtoken`);
/// its answers are bare status codes, so the edge's own refusals are too: 429 over the address
/// rate, 413 over the body limit, 404 for a path no study route has.
struct StudyEdge: Sendable {
    /// The client path prefixes, each served with and without a rest.
    static let prefixes = ["/v1/user", "/v1/queue", "/v1/chat"]
    static let internalPrefix = "/study"

    let gateway: GatewaySettings
    let routes: RouteTable
    let proxy: ReverseProxy
    let addressLimiter: RateLimiter

    func addRoutes(to router: ServiceRouter<GatewayRequestContext>, middleware: AccessLogMiddleware) {
        for prefix in Self.prefixes {
            let group = router.group(RouterPath(prefix)).add(middleware: middleware)
            for method in [HTTPRequest.Method.get, .post, .put, .delete, .patch] {
                for path in ["", "**"] {
                    group.on(RouterPath(path), method: method) { request, context in
                        do {
                            return try await handle(request, context: context)
                        } catch let refusal as StudyEdgeRefusal {
                            return Response(status: refusal.status)
                        } catch let error as APIError {
                            return Response(status: error.status)  // the proxy's: the service is down or too slow
                        } catch {
                            return Response(status: .badGateway)
                        }
                    }
                }
            }
        }
    }

    func handle(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        guard addressLimiter.allow(context.clientAddress) else { throw StudyEdgeRefusal(status: .tooManyRequests) }
        let path = Self.internalPrefix + request.uri.path
        guard let route = routes.match(method: request.method, path: path), let base = gateway.upstreams[route.upstream] else {
            throw StudyEdgeRefusal(status: .notFound)
        }
        let bodyLimit = gateway.bodyLimit(contentType: request.headers[.contentType])
        if let length = request.headers[.contentLength].flatMap(Int.init), length > bodyLimit { throw StudyEdgeRefusal(status: .contentTooLarge) }
        return try await proxy.forward(
            request, to: base, path: path, userId: nil, requestId: context.requestId, clientAddress: context.clientAddress, bodyLimit: bodyLimit)
    }
}

struct StudyEdgeRefusal: Error {
    let status: HTTPResponse.Status
}
