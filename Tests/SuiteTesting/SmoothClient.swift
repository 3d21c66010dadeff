import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import Testing

/// Smooth's client as its iOS app talks (client contract §2.0): no `SesacKey`,
/// `Authorization: " <jwt>"` (a leading space, no scheme), JSON bodies, the
/// `{isSuccess, code, message, result}` envelope.
public struct SmoothAnswer: Sendable {
    public let response: TestResponse

    public init(response: TestResponse) { self.response = response }

    public var status: HTTPResponse.Status { response.status }
    public var body: String { String(buffer: response.body) }
    /// The whole envelope.
    public var envelope: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any] }
    public var isSuccess: Bool { envelope?["isSuccess"] as? Bool ?? false }
    public var code: Int? { envelope?["code"] as? Int }
    /// `result` as an object, when it is one.
    public var result: [String: Any]? { envelope?["result"] as? [String: Any] }
    /// `result` as an array, when it is one.
    public var resultArray: [[String: Any]]? { envelope?["result"] as? [[String: Any]] }
    /// "200 1000", "400 4002", "401" (an empty 401): what a test compares.
    public var outcome: String { code.map { "\(status.code) \($0)" } ?? "\(status.code)" }
}

extension Stack {
    /// A signed-in Smooth user: the token, the integer id the surface shows, and the name#code tag.
    public struct SmoothUser: Sendable {
        public let id: Int
        public let email: String
        public let name: String
        public let code: String
        public let token: String

        public init(id: Int, email: String, name: String, code: String, token: String) {
            self.id = id
            self.email = email
            self.name = name
            self.code = code
            self.token = token
        }
    }

    /// Smooth's headers: the token after one space, as Moya's `.custom("")` plugin sends it.
    public func smoothHeaders(token: String?, contentType: String? = "application/json") -> HTTPFields {
        var h = HTTPFields()
        if let token { h[.authorization] = " " + token }
        if let contentType { h[.contentType] = contentType }
        return h
    }

    /// A Smooth request; `json` is the body, if any.
    public func smooth(_ method: HTTPRequest.Method, _ uri: String, _ user: SmoothUser? = nil, json: String? = nil) async throws -> SmoothAnswer {
        SmoothAnswer(
            response: try await client.execute(
                uri: uri, method: method, headers: smoothHeaders(token: user?.token, contentType: json == nil ? nil : "application/json"),
                body: json.map { ByteBuffer(string: $0) }))
    }

    /// A Smooth multipart request (file parts as `multipart(file:…)` builds them).
    public func smoothMultipart(
        _ method: HTTPRequest.Method, _ uri: String, _ user: SmoothUser?, fields: [String: String], file: [UInt8]? = nil,
        fileField: String = "image", contentType: String = "image/jpeg"
    ) async throws -> SmoothAnswer {
        let body = multipart(file: file, name: fileField, filename: "smooth-upload", contentType: contentType, fields: fields)
        return SmoothAnswer(
            response: try await client.execute(
                uri: uri, method: method, headers: smoothHeaders(token: user?.token, contentType: body.contentType), body: body.body))
    }
}
