import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Smooth's (the Discord-style client's) answers, client contract §2.0: success is
/// `{isSuccess:true, code:1000, message, result?}` with HTTP 200; a refusal is HTTP 400 with
/// `{isSuccess:false, code, message}`. Only the legacy surface under `/smooth/...` speaks it.
public struct SmoothResponse<Result: Encodable & Sendable>: ResponseGenerator, Sendable {
    public let result: Result?

    public init(_ result: Result) { self.result = result }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        try SmoothEnvelope.response(result: result)
    }
}

/// An answer with no `result` (the contract's "–" rows).
public struct SmoothDone: ResponseGenerator, Sendable {
    public init() {}

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        try SmoothEnvelope.response(result: nil as Int?)
    }
}

public enum SmoothEnvelope {
    public static let successCode = 1000
    public static let successMessage = "요청에 성공하였습니다."

    /// A nil `result` is left out (synthesised `encodeIfPresent`): the contract's "–" answers.
    private struct Body<Result: Encodable>: Encodable {
        let isSuccess: Bool
        let code: Int
        let message: String
        let result: Result?
    }

    /// The encoder of every Smooth body: keys as written, slashes unescaped.
    public static func encoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.withoutEscapingSlashes]
        return e
    }

    static func response<Result: Encodable>(result: Result?) throws -> Response {
        let data = try encoder().encode(Body(isSuccess: true, code: successCode, message: successMessage, result: result))
        return json(status: .ok, ByteBuffer(bytes: data))
    }

    static func json(status: HTTPResponse.Status, _ body: ByteBuffer) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.contentLength] = String(body.readableBytes)
        return Response(status: status, headers: headers, body: .init(byteBuffer: body))
    }

    /// The refusal body, HTTP 400 (the contract's errors are all 400).
    public static func failure(code: Int, message: String) -> Response {
        let data = (try? encoder().encode(Body<Int>(isSuccess: false, code: code, message: message, result: nil))) ?? Data()
        return json(status: .badRequest, ByteBuffer(bytes: data))
    }
}
