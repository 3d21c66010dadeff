import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// How the study app is answered when it is refused: a status code and no body (client contract
/// §3.0: the status is the API, clients branch on the number).
struct StudyRefusal: Error, Equatable {
    let status: HTTPResponse.Status

    /// The Firebase ID token is missing, malformed, expired, or not this project's.
    static let unauthorized = StudyRefusal(status: .unauthorized)
    /// The uid has no account (or withdrew).
    static let notRegistered = StudyRefusal(status: .notAcceptable)
    /// A field is missing or malformed (the app's "check the request" code).
    static let badField = StudyRefusal(status: .notImplemented)
    static let tooLarge = StudyRefusal(status: .contentTooLarge)

    /// One of the 2xx answers that mean "not done" (201–206, per endpoint).
    static func code(_ code: Int) -> StudyRefusal { StudyRefusal(status: HTTPResponse.Status(code: code)) }
}

/// A request body as the study app sends it: `application/x-www-form-urlencoded` with arrays as
/// repeated keys without brackets (`studylist=a&studylist=b`, Alamofire's `.noBrackets`), or a
/// JSON object (one client posts chats as JSON), whose arrays become repeated values.
struct StudyForm: Sendable {
    private var values: [String: [String]] = [:]

    static let maxBytes = 64 * 1024

    static func read(_ request: Request) async throws(StudyRefusal) -> StudyForm {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: maxBytes)
        } catch {
            throw .tooLarge
        }
        let bytes = Array(buffer.readableBytesView)
        if bytes.isEmpty { return StudyForm() }
        let contentType = request.headers[.contentType]?.lowercased() ?? ""
        if contentType.hasPrefix("application/json") { return try json(bytes) }
        return try urlEncoded(bytes)
    }

    init(values: [String: [String]] = [:]) { self.values = values }

    private static func urlEncoded(_ bytes: [UInt8]) throws(StudyRefusal) -> StudyForm {
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .badField }
        var form = StudyForm()
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = decode(parts[0]), let value = decode(parts.count > 1 ? parts[1] : "") else { throw .badField }
            form.values[key, default: []].append(value)
        }
        return form
    }

    private static func decode(_ part: Substring) -> String? {
        String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    private static func json(_ bytes: [UInt8]) throws(StudyRefusal) -> StudyForm {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else { throw .badField }
        var form = StudyForm()
        func text(_ value: Any) -> String? {
            switch value {
            case let string as String: return string
            case let number as NSNumber: return number.stringValue
            default: return nil
            }
        }
        for (key, value) in object {
            if let array = value as? [Any] {
                form.values[key] = array.compactMap(text)
            } else if let single = text(value) {
                form.values[key] = [single]
            }
        }
        return form
    }

    /// The field's single value (501 when absent).
    func string(_ key: String) throws(StudyRefusal) -> String {
        guard let value = values[key]?.first else { throw .badField }
        return value
    }

    /// Every value of a repeated field (empty when absent).
    func strings(_ key: String) -> [String] { values[key] ?? [] }

    /// The field as an integer within `range` (501 when absent, not an integer, or outside).
    func int(_ key: String, in range: ClosedRange<Int>) throws(StudyRefusal) -> Int {
        guard let value = Int(try string(key).trimmingCharacters(in: .whitespaces)), range.contains(value) else { throw .badField }
        return value
    }
}
