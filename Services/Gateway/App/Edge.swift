import AccessTokens
import Common
import Events
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ServiceKit

/// The client-facing edge for every `/v1/...` request: app key, route, access token, rate limit,
/// body limit, then the reverse proxy. Every refusal is the contract's `{"errorCode":"E.."}`.
struct Edge: Sendable {
    let settings: GatewaySettings
    let routes: RouteTable
    let verifier: AccessTokenVerifier
    let proxy: ReverseProxy
    let userLimiter: RateLimiter
    let addressLimiter: RateLimiter

    static let sesacKey = HTTPField.Name("SesacKey")!

    func handle(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        guard let key = request.headers[Self.sesacKey]?.trimmingHTTPWhitespace(), settings.sesacKeys.contains(key) else {
            throw APIError.authenticationFailed
        }
        guard addressLimiter.allow(context.clientAddress) else { throw APIError.tooManyRequests }
        let path = GenerationA.upstreamPath(request.method, request.uri.path, keySpeaksGenerationA: settings.generationAKeys.contains(key), routes)
        guard let route = routes.match(method: request.method, path: path) else { throw APIError.unknownRoute }
        let bodyLimit = settings.bodyLimit(contentType: request.headers[.contentType])
        if let length = request.headers[.contentLength].flatMap(Int.init), length > bodyLimit {
            throw APIError.bodyTooLarge(limit: bodyLimit)
        }
        var userId: String?
        if !route.isPublic {
            guard let token = bareToken(fromAuthorizationHeader: request.headers[.authorization]) else { throw APIError.authenticationFailed }
            do {
                userId = try await verifier.verify(token).userId
            } catch AccessTokenError.expired {
                throw APIError.accessTokenExpired
            } catch {
                throw APIError.authenticationFailed
            }
            if let userId, !userLimiter.allow(userId) { throw APIError.tooManyRequests }
        }
        guard let base = settings.upstreams[route.upstream] else { throw APIError.internalError }
        return try await proxy.forward(
            request, to: base, path: path, userId: userId, requestId: context.requestId, clientAddress: context.clientAddress, bodyLimit: bodyLimit
        )
    }
}

/// Request ids and one access-log line per request (method, path, status, duration; never
/// headers, bodies or query strings, which carry tokens and cursors).
struct AccessLogMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext
    let logger: Logger

    func handle(_ request: Request, context: GatewayRequestContext, next: (Request, GatewayRequestContext) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        var context = context
        context.requestId = requestId(from: request)
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            let mapped = ErrorMiddleware<GatewayRequestContext>.map(error)
            if mapped.status == .internalServerError || mapped.status == .serviceUnavailable {
                logger.error("request failed", metadata: [LogKey.error: "\(mapped.detail ?? mapped.code)", "http.path": "\(request.uri.path)"])
            }
            response = try mapped.response(from: request, context: context)
        }
        response.headers[GatewayHeader.requestId] = context.requestId
        let elapsed = ContinuousClock.now - started
        let ms = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        logger.info(
            "access",
            metadata: [
                "http.method": "\(request.method)", "http.path": "\(request.uri.path)", "http.status": "\(response.status.code)",
                "http.duration_ms": "\(String(format: "%.1f", ms))", "client.address": "\(context.clientAddress)",
                LogKey.requestId: "\(context.requestId)",
            ])
        return response
    }
}

/// A valid client-supplied `X-Request-Id` (≤ 64 of `[A-Za-z0-9._-]`), else a new UUIDv7.
func requestId(from request: Request) -> String {
    if let given = request.headers[GatewayHeader.requestId], (1...64).contains(given.count),
        given.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") })
    {
        return given
    }
    return UUIDv7.generate().lowercased
}
