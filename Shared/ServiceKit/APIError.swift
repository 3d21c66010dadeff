import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// An error a client can act on, rendered as the contract's `{"errorCode":"E.."}`.
public struct APIError: HTTPResponseError, Sendable, Equatable, CustomStringConvertible {
    public let code: String
    public let status: HTTPResponse.Status
    /// For logs only; never sent to the client.
    public let detail: String?
    /// Sent as `Retry-After` (seconds) when set: when the client may try again.
    public private(set) var retryAfterSeconds: Int?

    public init(_ code: String, status: HTTPResponse.Status = .badRequest, detail: String? = nil) {
        self.code = code
        self.status = status
        self.detail = detail
    }

    public var description: String { detail.map { "\(code): \($0)" } ?? code }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        Self.response(code: code, status: status, retryAfterSeconds: retryAfterSeconds)
    }

    static func response(code: String, status: HTTPResponse.Status, retryAfterSeconds: Int? = nil) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        if let retryAfterSeconds { headers[.retryAfter] = String(retryAfterSeconds) }
        let body = ByteBuffer(string: "{\"errorCode\":\"\(code)\"}")
        headers[.contentLength] = String(body.readableBytes)
        return Response(status: status, headers: headers, body: .init(byteBuffer: body))
    }

    public static func == (lhs: APIError, rhs: APIError) -> Bool { lhs.code == rhs.code && lhs.status == rhs.status }
}

extension APIError {
    /// E01: no access permission.
    public static let noPermission = APIError("E01")
    /// E02: authentication failed (bad or missing token or SesacKey).
    public static let authenticationFailed = APIError("E02", status: .unauthorized)
    /// E03: unknown account / login failed.
    public static let unknownAccount = APIError("E03")
    /// E04: access token still valid (refresh refused).
    public static let accessTokenStillValid = APIError("E04")
    /// E05: access token expired; clients refresh on it (HTTP 400 is required by AMOR).
    public static let accessTokenExpired = APIError("E05")
    /// E06: refresh token expired or revoked; clients log out.
    public static let refreshTokenExpired = APIError("E06")
    /// E11: bad request.
    public static func badRequest(_ detail: String? = nil) -> APIError { APIError("E11", detail: detail) }
    /// E11 with HTTP 413: a body over its limit.
    public static func bodyTooLarge(limit: Int) -> APIError { APIError("E11", status: .contentTooLarge, detail: "body over \(limit) bytes") }
    /// E12: duplicate data or "no changes".
    public static func duplicate(_ detail: String? = nil) -> APIError { APIError("E12", detail: detail) }
    /// E13: data does not exist.
    public static func notFound(_ detail: String? = nil) -> APIError { APIError("E13", detail: detail) }
    /// E14: permission denied (not the owner).
    public static func forbidden(_ detail: String? = nil) -> APIError { APIError("E14", detail: detail) }
    /// E15: request not possible (owner cannot leave).
    public static func notPossible(_ detail: String? = nil) -> APIError { APIError("E15", detail: detail) }
    /// E21: not enough coins.
    public static let notEnoughCoins = APIError("E21")
    /// E81: payment already processed, or unknown to the payment provider (the clients disagree
    /// which; the contract takes both).
    public static func paymentProcessed(_ detail: String? = nil) -> APIError { APIError("E81", detail: detail) }
    /// E82: invalid payment (not paid, or not a catalogue item at its price).
    public static func invalidPayment(_ detail: String? = nil) -> APIError { APIError("E82", detail: detail) }
    /// E97: unknown route.
    public static let unknownRoute = APIError("E97", status: .notFound)
    /// E98: too many calls.
    public static let tooManyRequests = APIError("E98", status: .tooManyRequests)
    /// E98 with `Retry-After`: the service is saturated and sheds this request at once rather than
    /// queueing it (the contract's code for "too many calls": clients back off and retry).
    public static func overloaded(retryAfterSeconds: Int = 1, detail: String) -> APIError {
        var error = APIError("E98", status: .tooManyRequests, detail: detail)
        error.retryAfterSeconds = retryAfterSeconds
        return error
    }
    /// E99 with HTTP 503: a dependency (a service, Apple, Kakao…) did not answer usefully.
    public static func dependencyUnavailable(_ detail: String) -> APIError { APIError("E99", status: .serviceUnavailable, detail: detail) }
    /// E03 with a logged reason (login failed, unknown account).
    public static func loginFailed(_ detail: String) -> APIError { APIError("E03", detail: detail) }
    /// E99: internal server error (the detail is logged, never sent).
    public static let internalError = APIError("E99", status: .internalServerError)
}
