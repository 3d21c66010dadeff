import Events
import Foundation
import Hummingbird
import NIOCore
import ServiceKit

/// Profile images on a volume owned by `auth`, named by a fresh UUIDv7 and the sniffed format
/// (client file names are never used for paths), served as `/v1/static/profiles/<file>`.
struct ProfileImages: Sendable {
    let directory: URL
    static let maxBytes = 5 * 1024 * 1024
    static let urlPrefix = "/static/profiles/"

    init(directory: String) throws {
        self.directory = URL(fileURLWithPath: directory, isDirectory: true).standardizedFileURL
        do {
            try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        } catch {
            throw StartupError("auth.files-directory \(directory) cannot be created: \(error)")
        }
        guard FileManager.default.isWritableFile(atPath: self.directory.path) else {
            throw StartupError("auth.files-directory \(directory) is not writable")
        }
    }

    /// Validates and stores the `image` part; returns the contract's relative path.
    func store(_ parts: [FormPart]) throws -> String {
        guard let part = parts.first(where: { $0.name == "image" }) else { throw APIError.badRequest("multipart part 'image' is required") }
        guard part.body.readableBytes > 0, part.body.readableBytes <= Self.maxBytes else {
            throw APIError.badRequest("image must be 1 byte to 5 MB")
        }
        guard let format = ImageFormat(sniffing: part.body) else { throw APIError.badRequest("image must be JPEG, PNG, GIF or WebP") }
        let name = "\(UUIDv7.generate().lowercased).\(format.rawValue)"
        let data = Data(part.body.readableBytesView)
        do {
            try data.write(to: directory.appendingPathComponent(name), options: .atomic)
        } catch {
            throw APIError("E99", status: .internalServerError, detail: "writing profile image failed: \(error)")
        }
        return Self.urlPrefix + name
    }

    /// Deletes a stored image by its relative path (best effort; unknown paths are ignored).
    func remove(_ path: String?) {
        guard let path, let name = Self.fileName(fromPath: path) else { return }
        try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
    }

    /// The file for `name` when it is one of ours (no traversal, no other files), else E13.
    func file(named name: String) throws -> (path: String, format: ImageFormat) {
        guard Self.isOurName(name), let dot = name.lastIndex(of: "."), let format = ImageFormat(fileExtension: String(name[name.index(after: dot)...])) else {
            throw APIError.notFound("profile image")
        }
        let path = directory.appendingPathComponent(name).path
        guard FileManager.default.fileExists(atPath: path) else { throw APIError.notFound("profile image") }
        return (path, format)
    }

    static func fileName(fromPath path: String) -> String? {
        guard path.hasPrefix(urlPrefix) else { return nil }
        let name = String(path.dropFirst(urlPrefix.count))
        return isOurName(name) ? name : nil
    }

    /// `<uuid>.<ext>` in lower case: 36 characters of hex and dashes, a dot, a known extension.
    static func isOurName(_ name: String) -> Bool {
        let parts = name.split(separator: ".")
        guard parts.count == 2, parts[0].count == 36, ImageFormat(fileExtension: String(parts[1])) != nil else { return false }
        return parts[0].allSatisfy { ($0 >= "0" && $0 <= "9") || ($0 >= "a" && $0 <= "f") || $0 == "-" }
    }
}
