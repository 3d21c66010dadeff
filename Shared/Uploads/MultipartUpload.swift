import _NIOFileSystem
import ClientContract
import Events
import Foundation
import Hummingbird
import NIOCore
import ServiceKit

/// A file part written to disk while the request streamed in.
public struct UploadedFile: Sendable, Equatable {
    /// The stored file's name inside the upload directory (safe: no separators, generated prefix).
    public var storedName: String
    /// The client's file name, sanitised.
    public var filename: String
    public var size: Int
    /// The form field the file came in (`files`, `image`, `thumbnail`, …).
    public var field: String
}

/// Limits of one streamed multipart upload; exceeding any is E11.
public struct UploadLimits: Sendable {
    /// The parts that are files (streamed to disk); every other part is a text field.
    public var fileFields: Set<String>
    public var maxFiles: Int
    public var maxFileBytes: Int
    public var maxTextBytes: Int
    /// Text parts (fields) in one body: a form has a handful; thousands of tiny ones are an attack.
    public var maxTextParts: Int
    /// The status of a file over `maxFileBytes` (E11 either way): 400 for the contract's clients,
    /// 413 where a surface answers an oversized part as an oversized body (Smooth's).
    public var fileTooLargeStatus: HTTPResponse.Status = .badRequest
    /// Whether a file whose client name has no known extension is named after its content (its
    /// first bytes: an image signature, `%PDF`, a ZIP header), as Smooth's app names its parts
    /// without one; otherwise such a file is refused. A known extension is checked against the
    /// content either way.
    public var kindFromContent = false

    public init(fileField: String, maxFiles: Int, maxFileBytes: Int, maxTextBytes: Int = 64 * 1024, maxTextParts: Int = 32) {
        self.init(fileFields: [fileField], maxFiles: maxFiles, maxFileBytes: maxFileBytes, maxTextBytes: maxTextBytes, maxTextParts: maxTextParts)
    }

    public init(fileFields: Set<String>, maxFiles: Int, maxFileBytes: Int, maxTextBytes: Int = 64 * 1024, maxTextParts: Int = 32) {
        self.fileFields = fileFields
        self.maxFiles = maxFiles
        self.maxFileBytes = maxFileBytes
        self.maxTextBytes = maxTextBytes
        self.maxTextParts = maxTextParts
    }
}

/// What a file may be: the extensions the clients send (client contract §1.7), each checked
/// against the file's first bytes where the format has a signature.
public enum UploadKind: String, Sendable, CaseIterable {
    case jpg, jpeg, png, gif, webp, pdf, zip

    public init?(filename: String) {
        guard let dot = filename.lastIndex(of: ".") else { return nil }
        self.init(rawValue: filename[filename.index(after: dot)...].lowercased())
    }

    public var contentType: String {
        switch self {
        case .jpg, .jpeg: "image/jpeg"
        case .png: "image/png"
        case .gif: "image/gif"
        case .webp: "image/webp"
        case .pdf: "application/pdf"
        case .zip: "application/zip"
        }
    }

    /// The kind `head` (a file's first bytes) is, by its signature; nil when none is recognised.
    public init?(sniffing head: ByteBuffer) {
        // An image format's extension (jpg, png, gif, webp) is a kind of the same name.
        if let image = ImageFormat(sniffing: head), let kind = UploadKind(rawValue: image.rawValue) {
            self = kind
        } else if let kind = [UploadKind.pdf, .zip].first(where: { $0.matches(head) }) {
            self = kind
        } else {
            return nil
        }
    }

    /// Whether `head` (the file's first bytes) is this kind. Any image extension accepts any
    /// image signature (clients label PNGs `.jpeg`, WSX `FileType.swift`).
    public func matches(_ head: ByteBuffer) -> Bool {
        let bytes = head.getBytes(at: head.readerIndex, length: min(8, head.readableBytes)) ?? []
        switch self {
        case .jpg, .jpeg, .png, .gif, .webp: return ImageFormat(sniffing: head) != nil
        case .pdf: return bytes.starts(with: Array("%PDF".utf8))
        case .zip: return bytes.starts(with: [0x50, 0x4B, 0x03, 0x04]) || bytes.starts(with: [0x50, 0x4B, 0x05, 0x06])
        }
    }

    /// The longest client file name kept (its end, with the extension): 100 characters and 200
    /// bytes, so the stored name (a 37-byte prefix added) stays under the 255 bytes file systems allow.
    public static let filenameLimit = TextLimit("filename", characters: 100, bytes: 200)

    /// A client file name made safe for a path segment: letters (any script), digits, `-`, `_` and
    /// single dots; everything else (separators, `..`, control characters) becomes `_`; only the
    /// end within `filenameLimit` is kept.
    public static func sanitise(_ name: String) -> String {
        var out = cleaned(name)
        if !filenameLimit.allows(out) {
            var start = out.endIndex
            var (characters, bytes) = (0, 0)
            for index in out.indices.reversed() {
                let size = out[index].utf8.count
                guard characters + 1 <= filenameLimit.maxCharacters, bytes + size <= filenameLimit.maxBytes else { break }
                (characters, bytes, start) = (characters + 1, bytes + size, index)
            }
            out = String(out[start...])
            while out.hasPrefix(".") { out.removeFirst() }
        }
        return out
    }

    /// Whether `name` is already safe for a path segment (what `sanitise` makes of a name, at any length).
    public static func isSafe(_ name: String) -> Bool {
        cleaned(name) == name
    }

    private static func cleaned(_ name: String) -> String {
        var out = ""
        for scalar in name.unicodeScalars {
            let c = Character(scalar)
            if c.isLetter || c.isNumber || c == "-" || c == "_" || c == "." { out.append(c) } else { out.append("_") }
        }
        while out.contains("..") { out = out.replacingOccurrences(of: "..", with: "_") }
        while out.hasPrefix(".") { out.removeFirst() }
        return out
    }
}

extension Request {
    /// Reads a `multipart/form-data` body as it streams in: text parts are collected (bounded),
    /// parts named in `limits.fileFields` are written straight to `directory` chunk by chunk (never
    /// held whole in memory), each checked for its kind and size. On any refusal the files
    /// written so far are removed. Malformed bodies, too many or too large files, unknown kinds
    /// are E11.
    public func streamMultipart(into directory: String, limits: UploadLimits) async throws -> (fields: [String: String], files: [UploadedFile]) {
        guard let contentType = headers[.contentType], let boundary = Self.boundary(of: contentType) else {
            throw APIError.badRequest("multipart body without a boundary")
        }
        let upload = StreamingUpload(directory: directory, limits: limits)
        do {
            var scanner = try MultipartScanner(boundary: boundary)
            for try await chunk in body {
                try scanner.feed(chunk) { event in
                    switch event {
                    case .header(let name, let value): upload.events.append(.header(name, value))
                    case .body(let piece): upload.events.append(.body(piece))
                    case .partEnd: upload.events.append(.end)
                    }
                }
                try await upload.drain()
            }
            guard scanner.isComplete, upload.completedParts > 0, upload.current == nil else { throw APIError.badRequest("truncated multipart body") }
            return (upload.fields, upload.files)
        } catch {
            await upload.abandon()
            throw error
        }
    }
}

/// The state of one streamed upload. Used by one task only (the request's), never shared.
private final class StreamingUpload {
    enum Event { case header(String, String), body(ByteBuffer), end }

    struct Part {
        var headers: [(String, String)] = []
        var started = false
        /// Counted against the text-part limit.
        var counted = false
        var name = ""
        var filename: String?
        var text = ByteBuffer()
        /// A file part's first bytes, until its kind is known.
        var head = ByteBuffer()
        var file: (handle: WriteFileHandle, stored: String, filename: String, kind: UploadKind)?
        var written: Int64 = 0
    }

    let directory: String
    let limits: UploadLimits
    var events: [Event] = []
    var current: Part?
    var fields: [String: String] = [:]
    var files: [UploadedFile] = []
    var completedParts = 0
    var textParts = 0

    init(directory: String, limits: UploadLimits) {
        self.directory = directory
        self.limits = limits
    }

    func drain() async throws {
        let pending = events
        events = []
        for event in pending {
            switch event {
            case .header(let name, let value):
                if current == nil { current = Part() }
                current?.headers.append((name, value))
            case .body(let chunk):
                if current == nil { current = Part() }
                try await write(chunk)
            case .end:
                try await finish()
            }
        }
    }

    /// Bytes a file part's kind is recognised from; held back until they have all arrived (a
    /// body chunk can end anywhere, even inside a signature).
    static let signatureLength = 16

    /// Reads the part's headers once, when its first body bytes or its end arrive.
    private func begin() {
        guard var part = current, !part.started else { return }
        part.started = true
        let disposition = part.headers.first { $0.0.lowercased() == "content-disposition" }?.1 ?? ""
        part.name = Request.parameter("name", in: disposition) ?? ""
        part.filename = Request.parameter("filename", in: disposition)
        current = part
    }

    /// Opens the file of a file part once its signature bytes are in, and writes them.
    private func openFile(_ part: inout Part) async throws {
        guard files.count < limits.maxFiles else { throw APIError.badRequest("at most \(limits.maxFiles) files") }
        var filename = UploadKind.sanitise(part.filename ?? "file")
        if UploadKind(filename: filename) == nil, limits.kindFromContent, let sniffed = UploadKind(sniffing: part.head) {
            filename = UploadKind.sanitise(filename + "." + sniffed.rawValue)
        }
        guard let kind = UploadKind(filename: filename) else {
            throw APIError.badRequest("files must be jpg, jpeg, png, gif, webp, pdf or zip")
        }
        guard kind.matches(part.head) else { throw APIError.badRequest("file content is not \(kind.rawValue)") }
        let stored = "\(UUIDv7.generate().lowercased)_\(filename)"
        let handle = try await FileSystem.shared.openFile(
            forWritingAt: FilePath(directory).appending(stored), options: .newFile(replaceExisting: false)
        )
        part.file = (handle, stored, filename, kind)
        try await append(part.head, to: &part)
        part.head = ByteBuffer()
    }

    private func append(_ chunk: ByteBuffer, to part: inout Part) async throws {
        guard let file = part.file, chunk.readableBytes > 0 else { return }
        guard part.written + Int64(chunk.readableBytes) <= Int64(limits.maxFileBytes) else {
            throw APIError("E11", status: limits.fileTooLargeStatus, detail: "a file is over \(limits.maxFileBytes) bytes")
        }
        try await file.handle.write(contentsOf: chunk, toAbsoluteOffset: part.written)
        part.written += Int64(chunk.readableBytes)
    }

    private func write(_ chunk: ByteBuffer) async throws {
        begin()
        guard var part = current else { return }
        let isFile = limits.fileFields.contains(part.name)
        if !isFile, !part.counted {
            part.counted = true
            textParts += 1
            guard textParts <= limits.maxTextParts else { throw APIError.badRequest("at most \(limits.maxTextParts) text fields") }
        }
        if isFile {
            if part.file == nil {
                var chunk = chunk
                part.head.writeBuffer(&chunk)
                if part.head.readableBytes >= Self.signatureLength { try await openFile(&part) }
            } else {
                try await append(chunk, to: &part)
            }
        } else {
            guard part.text.readableBytes + chunk.readableBytes <= limits.maxTextBytes else { throw APIError.badRequest("a text field is too long") }
            var chunk = chunk
            part.text.writeBuffer(&chunk)
        }
        current = part
    }

    private func finish() async throws {
        begin()
        guard var part = current else { return }
        current = part
        let isFile = limits.fileFields.contains(part.name)
        if isFile, part.file == nil, part.head.readableBytes > 0 {
            try await openFile(&part)  // a file shorter than the signature length
            current = part
        }
        current = nil
        completedParts += 1
        if let file = part.file {
            try await file.handle.close()
            files.append(UploadedFile(storedName: file.stored, filename: file.filename, size: Int(part.written), field: part.name))
        } else if !isFile {
            fields[part.name] = String(buffer: part.text)
        }
    }

    /// Removes what this upload wrote (a refused request leaves nothing behind).
    func abandon() async {
        if let handle = current?.file?.handle { try? await handle.close(makeChangesVisible: false) }
        for file in files { try? FileManager.default.removeItem(atPath: directory + "/" + file.storedName) }
    }
}
