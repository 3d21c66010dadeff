import Database
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import PostgresNIO

/// Maps every error to the contract's `{"errorCode":"E.."}`: domain `APIError`s as they are,
/// framework errors to their client-facing code, and anything unexpected to E99 with the detail
/// logged (at error level, with the request's method and path, never the body).
public struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    public init() {}

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let mapped = Self.map(error)
            if mapped.status == .internalServerError {
                context.logger.error(
                    "unexpected error",
                    metadata: [
                        LogKey.errorType: "\(type(of: error))",
                        LogKey.error: "\(String(reflecting: error))",
                        "http.method": "\(request.method)",
                        "http.path": "\(request.uri.path)",
                    ])
            } else if mapped.status == .serviceUnavailable {
                // A dependency outage (the database, a provider): the operator's business.
                context.logger.warning(
                    "dependency unavailable",
                    metadata: [
                        LogKey.error: "\(mapped.detail ?? mapped.code)", "http.method": "\(request.method)", "http.path": "\(request.uri.path)",
                    ])
            } else if let detail = mapped.detail {
                context.logger.debug("client error", metadata: ["error.code": "\(mapped.code)", LogKey.error: "\(detail)"])
            }
            return APIError.response(code: mapped.code, status: mapped.status, retryAfterSeconds: mapped.retryAfterSeconds)
        }
    }

    public static func map(_ error: any Error) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let error as any SurfaceRefusal:
            return error.apiError
        case let error as PostgresTransactionError:
            if error.isDatabaseUnavailable { return .dependencyUnavailable("database unavailable: \(String(reflecting: error))") }
            if let inner = error.closureError { return map(inner) }
            return APIError("E99", status: .internalServerError, detail: String(reflecting: error))
        case let error where error.isDatabaseUnavailable:
            return .dependencyUnavailable("database unavailable: \(String(reflecting: error))")
        case let error where error.isUnstorableText:
            return .badRequest("text the database cannot store: \(String(reflecting: error))")
        case let error as HTTPError:
            switch error.status {
            case .notFound, .methodNotAllowed: return APIError("E97", status: .notFound, detail: error.body)
            case .unauthorized: return APIError("E02", status: .unauthorized, detail: error.body)
            case .contentTooLarge: return APIError("E11", status: .contentTooLarge, detail: "body too large")
            case .tooManyRequests: return .tooManyRequests
            case let s where s.kind == .clientError: return APIError("E11", detail: error.body)
            default: return APIError("E99", status: .internalServerError, detail: String(reflecting: error))
            }
        case let error as OutboxEventTooLarge:
            // Field limits stop oversized input first; this is the last guard before the commit.
            return APIError("E11", detail: error.description)
        case is DecodingError:
            return APIError("E11", detail: "\(error)")
        default:
            return APIError("E99", status: .internalServerError, detail: String(reflecting: error))
        }
    }
}
