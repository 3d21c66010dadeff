import AccessTokens
import HTTPTypes
import Hummingbird
import ServiceKit

/// The edge of Smooth's REST surface (client contract §2.0, docs/smooth-api.md): its three
/// servers' prefixes map onto the services' `/smooth/<server>/...` routes (the catalog says which
/// service owns which). Smooth sends no `SesacKey`, and `Authorization: " <jwt>"` (a leading
/// space, no scheme); a missing or bad token is HTTP 401 with an empty body, every other refusal
/// the contract's envelope.
struct SmoothEdge: Sendable {
    let settings: SmoothSettings
    let gateway: GatewaySettings
    let routes: RouteTable
    let verifier: AccessTokenVerifier
    let proxy: ReverseProxy
    let userLimiter: RateLimiter
    let addressLimiter: RateLimiter
    let home: SmoothHome

    /// Adds each surface's catch-all routes to `router`.
    func addRoutes(to router: ServiceRouter<GatewayRequestContext>, middleware: AccessLogMiddleware) {
        for surface in settings.surfaces {
            let group = router.group(RouterPath(surface.prefix)).add(middleware: middleware)
            for method in [HTTPRequest.Method.get, .post, .put, .delete, .patch] {
                group.on("**", method: method) { request, context in
                    do {
                        return try await handle(request, context: context, surface: surface)
                    } catch let error as SmoothError {
                        return SmoothEnvelope.failure(code: error.code, message: error.message)
                    } catch SmoothEdgeRefusal.unauthenticated {
                        return Response(status: .unauthorized)
                    } catch {
                        return Self.render(ErrorMiddleware<GatewayRequestContext>.map(error), surface)
                    }
                }
            }
        }
    }

    func handle(_ request: Request, context: GatewayRequestContext, surface: SmoothSettings.Surface) async throws -> Response {
        guard addressLimiter.allow(context.clientAddress) else { throw APIError.tooManyRequests }
        let rest = request.uri.path.dropFirst(surface.prefix.count)
        let path = surface.internalPrefix + (rest.isEmpty || rest.hasPrefix("/") ? rest : "/" + rest)
        guard let route = routes.match(method: request.method, path: path) else { throw APIError.unknownRoute }
        let bodyLimit = gateway.bodyLimit(contentType: request.headers[.contentType])
        if let length = request.headers[.contentLength].flatMap(Int.init), length > bodyLimit {
            throw APIError.bodyTooLarge(limit: bodyLimit)
        }
        var userId: String?
        let token = bareToken(fromAuthorizationHeader: request.headers[.authorization])
        let anonymousAllowed = route.isPublic || (route.isAnonymousCompatible && settings.anonymousHistory)
        if let token, !route.isPublic {
            // A token that comes is checked, even where none is needed.
            guard let claims = try? await verifier.verify(token) else { throw SmoothEdgeRefusal.unauthenticated }
            userId = claims.userId
        } else if !anonymousAllowed {
            throw SmoothEdgeRefusal.unauthenticated
        }
        if let userId, !userLimiter.allow(userId) { throw APIError.tooManyRequests }
        guard let base = gateway.upstreams[route.upstream] else { throw APIError.internalError }
        let publicURL = publicURL(of: request)
        if SmoothHome.isHome(request.method, path), let userId, let chat = routes.match(method: .get, path: SmoothHome.unreadRoomsPath),
            let chatBase = gateway.upstreams[chat.upstream]
        {
            return try await home.answer(
                workspaceBase: base, chatBase: chatBase,
                headers: [
                    (GatewayHeader.userId, userId), (GatewayHeader.requestId, context.requestId), (GatewayHeader.publicURL, publicURL),
                    (GatewayHeader.smoothPrefixes, settings.prefixesHeader),
                ])
        }
        let response = try await proxy.forward(
            request, to: base, path: path, userId: userId, requestId: context.requestId, clientAddress: context.clientAddress,
            bodyLimit: bodyLimit, publicURL: publicURL, smoothPrefixes: settings.prefixesHeader
        )
        // A path under a served prefix that no Smooth route has: the service's router answered
        // in the suite's shape; the client gets Smooth's.
        if response.status == .notFound || response.status == .methodNotAllowed { throw APIError.unknownRoute }
        return response
    }

    /// `gateway.public-url`, else `http://` + the Host the client used.
    private func publicURL(of request: Request) -> String {
        if !settings.publicURL.isEmpty { return settings.publicURL }
        let host = request.head.authority ?? "127.0.0.1"
        return "http://" + host
    }

    /// The edge's own refusals in Smooth's shape, keeping the status clients and proxies act on
    /// (429 with `Retry-After`, 413, 404, 503).
    static func render(_ error: APIError, _ surface: SmoothSettings.Surface) -> Response {
        if error.status == .unauthorized { return Response(status: .unauthorized) }
        let translated = SmoothErrorMiddleware<GatewayRequestContext>.translate(error, surface.errors)
        var response = SmoothEnvelope.failure(code: translated.code, message: translated.message)
        if error.status != .badRequest { response.status = error.status }
        if let retry = error.retryAfterSeconds { response.headers[.retryAfter] = String(retry) }
        return response
    }
}

enum SmoothEdgeRefusal: Error {
    /// Missing, malformed, expired or forged token: 401 with an empty body.
    case unauthenticated
}
