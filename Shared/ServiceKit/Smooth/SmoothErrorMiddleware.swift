import Hummingbird
import Logging
import PostgresNIO

/// Smooth's servers, by the code ranges their errors use.
public enum SmoothSurface: Sendable {
    /// `/auth-server` and `/chat-server` (2xxx codes).
    case authAndChat
    /// `/community-server` (1xxx and 4xxx codes).
    case community
}

/// Renders every error of a Smooth route as the contract's envelope: a `SmoothError` as it is;
/// a `SurfaceRefusal` as it renders itself; the suite's own `APIError`s (thrown by the shared
/// domain code) mapped by `surface`; anything
/// else through `ErrorMiddleware`'s mapping first, so an unexpected error is still logged and
/// answered as the surface's server error. Mount it on the `/smooth/...` group only.
public struct SmoothErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    public typealias Surface = SmoothSurface

    let surface: Surface

    public init(surface: Surface) { self.surface = surface }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as SmoothError {
            return error.response
        } catch let error as any SurfaceRefusal {
            return error.smoothError(surface).response
        } catch let error as PostgresTransactionError where error.closureError is SmoothError || error.closureError is any SurfaceRefusal {
            // Thrown inside a transaction: the refusal, not a database error.
            if let refusal = error.closureError as? any SurfaceRefusal { return refusal.smoothError(surface).response }
            return (error.closureError as? SmoothError)?.response ?? SmoothError.serverError.response
        } catch {
            let mapped = ErrorMiddleware<Context>.map(error)
            if mapped.status == .internalServerError {
                context.logger.error("unexpected error", metadata: ["error": "\(String(reflecting: error))", "http.path": "\(request.uri.path)"])
            }
            // Unauthenticated (the edge normally answers this itself): 401 with an empty body.
            if mapped.status == .unauthorized { return Response(status: .unauthorized) }
            // Shedding load and outages keep their status (clients and proxies act on them).
            if mapped.status == .tooManyRequests || mapped.status == .serviceUnavailable || mapped.status == .contentTooLarge {
                var response = Self.translate(mapped, surface).response
                response.status = mapped.status
                if let retry = mapped.retryAfterSeconds { response.headers[.retryAfter] = String(retry) }
                return response
            }
            return Self.translate(mapped, surface).response
        }
    }

    /// The Smooth code for one of the suite's errors.
    public static func translate(_ error: APIError, _ surface: Surface) -> SmoothError {
        switch (error.code, surface) {
        case ("E98", _): return .tooManyRequests
        case ("E01", .community), ("E14", .community), ("E15", .community): return .noPermission
        case ("E01", .authAndChat), ("E14", .authAndChat), ("E15", .authAndChat): return .unauthorised
        case ("E13", .community): return .badRequest
        case ("E13", .authAndChat): return .accountNotFound
        case ("E99", .community): return .internalError
        case ("E99", .authAndChat): return .serverError
        case (_, .community): return .badRequest
        case (_, .authAndChat): return .invalidInput
        }
    }
}

extension SmoothError {
    var response: Response { SmoothEnvelope.failure(code: code, message: message) }
}
