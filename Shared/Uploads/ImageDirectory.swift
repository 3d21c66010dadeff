import Events
import Foundation
import Hummingbird
import NIOCore
import ServiceKit

/// Images (avatars, covers) on a volume owned by one service, named by a fresh UUIDv7 and the
/// sniffed format (client file names are never used for paths) and referred to by the
/// contract's relative path `<urlPrefix><file>`, served under `/v1<urlPrefix>`.
public struct ImageDirectory: Sendable {
    public let directory: URL
    public let urlPrefix: String
    public let maxBytes: Int

    /// - Parameters:
    ///   - setting: the configuration key naming the directory (for the startup error).
    ///   - urlPrefix: e.g. `/static/profiles/`.
    public init(directory: String, setting: String, urlPrefix: String, maxBytes: Int = 5 * 1024 * 1024) throws {
        self.directory = URL(fileURLWithPath: directory, isDirectory: true).standardizedFileURL
        self.urlPrefix = urlPrefix
        self.maxBytes = maxBytes
        do {
            try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        } catch {
            throw StartupError("\(setting) \(directory) cannot be created: \(error)")
        }
        guard FileManager.default.isWritableFile(atPath: self.directory.path) else {
            throw StartupError("\(setting) \(directory) is not writable")
        }
    }

    /// The multipart body limit that admits one image plus the text fields around it.
    public var multipartLimit: Int { maxBytes + 64 * 1024 }

    /// Validates and stores an image part; returns the contract's relative path. Empty, too
    /// large or not an image (by its bytes, whatever the declared type) is E11.
    public func store(_ part: FormPart) throws -> String {
        guard part.body.readableBytes > 0, part.body.readableBytes <= maxBytes else {
            throw APIError.badRequest("image must be 1 byte to \(maxBytes / 1024 / 1024) MB")
        }
        guard let format = ImageFormat(sniffing: part.body) else { throw APIError.badRequest("image must be JPEG, PNG, GIF or WebP") }
        let name = "\(UUIDv7.generate().lowercased).\(format.rawValue)"
        do {
            try Data(part.body.readableBytesView).write(to: directory.appendingPathComponent(name), options: .atomic)
        } catch {
            throw APIError("E99", status: .internalServerError, detail: "writing image failed: \(error)")
        }
        return urlPrefix + name
    }

    /// Deletes a stored image by its relative path (best effort; unknown paths are ignored).
    public func remove(_ path: String?) {
        guard let path, let name = fileName(fromPath: path) else { return }
        try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
    }

    /// The file for `name` when it is one of ours (no traversal, no other files), else E13.
    public func file(named name: String) throws -> (path: String, format: ImageFormat) {
        guard Self.isOurName(name), let dot = name.lastIndex(of: "."),
            let format = ImageFormat(fileExtension: String(name[name.index(after: dot)...]))
        else { throw APIError.notFound("image") }
        let path = directory.appendingPathComponent(name).path
        guard FileManager.default.fileExists(atPath: path) else { throw APIError.notFound("image") }
        return (path, format)
    }

    /// Serves one of our images with a long private cache lifetime (names are never reused).
    public func response(named name: String, context: some RequestContext) async throws -> Response {
        let file = try file(named: name)
        var response = Response(status: .ok, body: try await FileIO().loadFile(path: file.path, context: context))
        response.headers[.contentType] = file.format.contentType
        response.headers[.cacheControl] = "private, max-age=86400, immutable"
        return response
    }

    public func fileName(fromPath path: String) -> String? {
        guard path.hasPrefix(urlPrefix) else { return nil }
        let name = String(path.dropFirst(urlPrefix.count))
        return Self.isOurName(name) ? name : nil
    }

    /// `<uuid>.<ext>` in lower case: 36 characters of hex and dashes, a dot, a known extension.
    public static func isOurName(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 36, ImageFormat(fileExtension: String(parts[1])) != nil else { return false }
        return parts[0].allSatisfy { ($0 >= "0" && $0 <= "9") || ($0 >= "a" && $0 <= "f") || $0 == "-" }
    }
}
