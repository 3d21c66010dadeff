import Foundation
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import Testing

public struct AuthResultBody: Decodable, Sendable {
    public struct Token: Decodable, Sendable { public var accessToken: String; public var refreshToken: String }
    public var user_id: String
    public var email: String
    public var nickname: String
    public var createdAt: String
    public var token: Token
}

public func decode<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
    try JSONDecoder().decode(T.self, from: Data(buffer: response.body))
}

public func errorCode(_ response: TestResponse) -> String? {
    (try? JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])?["errorCode"] as? String
}

/// Every string value that looks like a date must be in the contract's format.
public func expectContractDates(_ response: TestResponse, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let object = try JSONSerialization.jsonObject(with: Data(buffer: response.body))
    func walk(_ value: Any, _ key: String) {
        if let dict = value as? [String: Any] {
            dict.forEach { walk($0.value, $0.key) }
        } else if let array = value as? [Any] {
            array.forEach { walk($0, key) }
        } else if let text = value as? String, key.lowercased().hasSuffix("at") || key == "createdAt" || key == "paidAt" {
            #expect(text.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "\(key)=\(text)", sourceLocation: sourceLocation)
        }
    }
    walk(object, "")
}

public func jsonObject(_ response: TestResponse) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any]
}

public func jsonArray(_ response: TestResponse) -> [[String: Any]]? {
    (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [[String: Any]]
}

/// A multipart/form-data body with text parts and optionally one file part.
public func multipart(
    file: [UInt8]? = nil, name: String = "image", filename: String = "WorkSpace_1.jpeg", contentType: String = "image/jpeg",
    fields: [String: String] = [:]
) -> (body: ByteBuffer, contentType: String) {
    let boundary = "Boundary-\(UUID().uuidString)"
    var buffer = ByteBuffer()
    for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
        buffer.writeString("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(key)\"\r\nContent-Type: text/plain\r\n\r\n\(value)\r\n")
    }
    if let file {
        buffer.writeString(
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"\(filename)\"\r\nContent-Type: \(contentType)\r\n\r\n")
        buffer.writeBytes(file)
        buffer.writeString("\r\n")
    }
    buffer.writeString("--\(boundary)--\r\n")
    return (buffer, "multipart/form-data; boundary=\(boundary)")
}

public let pngBytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 0x42, count: 100)
public let jpegBytes: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + Array(repeating: 0x11, count: 200)

/// A multipart/form-data body with text parts and any number of file parts (all named `fileField`).
public func multipart(
    fields: [String: String], files: [(filename: String, contentType: String, bytes: [UInt8])],
    fileField: String = "files"
) -> (body: ByteBuffer, contentType: String) {
    let boundary = "Boundary-\(UUID().uuidString)"
    var buffer = ByteBuffer()
    for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
        buffer.writeString("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(key)\"\r\nContent-Type: text/plain\r\n\r\n\(value)\r\n")
    }
    for file in files {
        buffer.writeString(
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(fileField)\"; filename=\"\(file.filename)\"\r\nContent-Type: \(file.contentType)\r\n\r\n"
        )
        buffer.writeBytes(file.bytes)
        buffer.writeString("\r\n")
    }
    buffer.writeString("--\(boundary)--\r\n")
    return (buffer, "multipart/form-data; boundary=\(boundary)")
}

public let pdfBytes: [UInt8] = Array("%PDF-1.4\n".utf8) + Array(repeating: 0x20, count: 300)
public let zipBytes: [UInt8] = [0x50, 0x4B, 0x03, 0x04] + Array(repeating: 0x00, count: 100)
