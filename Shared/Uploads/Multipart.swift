import Foundation
import Hummingbird
import NIOCore
import ServiceKit

/// One part of a `multipart/form-data` body.
public struct FormPart: Sendable {
    public var name: String
    public var filename: String?
    public var contentType: String?
    public var body: ByteBuffer

    /// The part as text (for `text/plain` fields such as `name` or `content`).
    public var text: String { String(buffer: body) }
}

extension Request {
    /// Whether the body is `multipart/form-data`.
    public var isMultipart: Bool {
        headers[.contentType]?.lowercased().hasPrefix("multipart/form-data") == true
    }

    /// Parses a `multipart/form-data` body of at most `limit` bytes and `maxParts` parts. Every
    /// malformed input (no boundary, truncated body, too large, too many parts) is E11, never a 500.
    public func multipartParts(limit: Int, maxParts: Int = 32) async throws -> [FormPart] {
        guard let contentType = headers[.contentType], let boundary = Self.boundary(of: contentType) else {
            throw APIError.badRequest("multipart body without a boundary")
        }
        var request = self
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: limit)
        } catch {
            throw APIError("E11", status: .contentTooLarge, detail: "multipart body over \(limit) bytes")
        }
        var headers: [(String, String)] = []
        var body = ByteBuffer()
        var parts: [FormPart] = []
        var scanner = try MultipartScanner(boundary: boundary)
        try scanner.feed(buffer) { event in
            switch event {
            case .header(let name, let value):
                headers.append((name, value))
            case .body(var chunk):
                // A part's body usually comes in one piece: kept as that slice, not copied.
                if body.readableBytes == 0 { body = chunk } else { body.writeBuffer(&chunk) }
            case .partEnd:
                guard parts.count < maxParts else { throw APIError.badRequest("more than \(maxParts) parts") }
                let disposition = headers.first { $0.0.lowercased() == "content-disposition" }?.1 ?? ""
                let type = headers.first { $0.0.lowercased() == "content-type" }?.1
                if let name = Self.parameter("name", in: disposition) {
                    parts.append(FormPart(name: name, filename: Self.parameter("filename", in: disposition), contentType: type, body: body))
                }
                headers = []
                body = ByteBuffer()
            }
        }
        guard scanner.isComplete else { throw APIError.badRequest("truncated multipart body") }
        return parts
    }

    static func boundary(of contentType: String) -> String? {
        parameter("boundary", in: contentType).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// A `key=value` or `key="value"` parameter of a header value.
    static func parameter(_ key: String, in header: String) -> String? {
        for piece in header.split(separator: ";") {
            let pair = piece.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[0].lowercased() == key else { continue }
            var value = pair[1]
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            return value
        }
        return nil
    }
}

/// Image formats accepted for avatars and covers, recognised by their first bytes (a declared
/// content type such as the non-standard `image/jpg` is not trusted).
public enum ImageFormat: String, Sendable {
    case jpeg = "jpg", png, gif, webp

    public init?(sniffing buffer: ByteBuffer) {
        let b = buffer.getBytes(at: buffer.readerIndex, length: min(12, buffer.readableBytes)) ?? []
        if b.starts(with: [0xFF, 0xD8, 0xFF]) {
            self = .jpeg
        } else if b.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            self = .png
        } else if b.starts(with: Array("GIF87a".utf8)) || b.starts(with: Array("GIF89a".utf8)) {
            self = .gif
        } else if b.count >= 12, b.starts(with: Array("RIFF".utf8)), Array(b[8..<12]) == Array("WEBP".utf8) {
            self = .webp
        } else {
            return nil
        }
    }

    public var contentType: String {
        switch self {
        case .jpeg: return "image/jpeg"
        case .png: return "image/png"
        case .gif: return "image/gif"
        case .webp: return "image/webp"
        }
    }

    public init?(fileExtension: String) {
        self.init(rawValue: fileExtension.lowercased() == "jpeg" ? "jpg" : fileExtension.lowercased())
    }
}
