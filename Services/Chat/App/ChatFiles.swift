import Foundation
import Hummingbird
import NIOCore
import ServiceKit
import Uploads

/// Message attachments on the volume owned by `chat` (`chat.files-directory`), referred to by the
/// contract's relative paths `/static/channelChats/<file>` and `/static/dmChats/<file>` and served
/// under `/v1` only to members of the conversation the message belongs to.
struct ChatFiles: Sendable {
    let directory: URL

    enum Prefix: String, Sendable {
        case channel = "/static/channelChats/"
        case dm = "/static/dmChats/"
    }

    init(directory: String) throws {
        self.directory = URL(fileURLWithPath: directory, isDirectory: true).standardizedFileURL
        do {
            try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        } catch {
            throw StartupError("chat.files-directory \(directory) cannot be created: \(error)")
        }
        guard FileManager.default.isWritableFile(atPath: self.directory.path) else {
            throw StartupError("chat.files-directory \(directory) is not writable")
        }
    }

    func paths(_ files: [UploadedFile], _ prefix: Prefix) -> [String] {
        files.map { prefix.rawValue + $0.storedName }
    }

    /// Deletes uploaded files nothing refers to (the send was refused after the upload).
    func remove(_ files: [UploadedFile]) {
        for file in files { try? FileManager.default.removeItem(at: directory.appendingPathComponent(file.storedName)) }
    }

    /// Deletes the files of a deleted message (stored paths like `/static/channelChats/<file>`).
    func remove(paths: [String]) {
        for path in paths {
            guard let name = path.split(separator: "/").last.map(String.init), Self.isStoredName(name) else { continue }
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
    }

    /// A stored name as we generate it: `<uuidv7>_<sanitised name>.<known kind>`, nothing else
    /// (no separators, no traversal, no other files of the directory).
    static func isStoredName(_ name: String) -> Bool {
        guard name.count > 37, UploadKind(filename: name) != nil, UploadKind.isSafe(name) else { return false }
        let id = name.prefix(36)
        return name.dropFirst(36).first == "_" && id.allSatisfy { ($0 >= "0" && $0 <= "9") || ($0 >= "a" && $0 <= "f") || $0 == "-" }
    }

    func response(for name: String, context: some RequestContext) async throws -> Response {
        guard Self.isStoredName(name), let kind = UploadKind(filename: name) else { throw APIError.notFound("file") }
        let path = directory.appendingPathComponent(name).path
        guard FileManager.default.fileExists(atPath: path) else { throw APIError.notFound("file") }
        var response = Response(status: .ok, body: try await FileIO().loadFile(path: path, context: context))
        response.headers[.contentType] = kind.contentType
        response.headers[.cacheControl] = "private, max-age=86400, immutable"
        return response
    }
}
