import Database
import Foundation
import Hummingbird
import ServiceKit
import Uploads

/// The multipart form of Smooth's `POST /chat-server/channel/file` (client contract §2.1): the
/// file `image` and its `thumbnail` (the app always sends one; a form without is accepted), the
/// sender's `userId`, the conversation's `channelId` and `type`, the `fileType`, an optional
/// `communityId`. The app's `name` and `profileImage` are ignored: the sender is the token's
/// user, shown from chat's profile read model.
struct SmoothFileForm: Sendable {
    enum Kind: String, Sendable {
        case community
        case direct
    }

    /// What the app says it sends. Stored files are typed by their content (`AttachmentKind`),
    /// so this is checked but not kept.
    enum FileType: String, Sendable {
        case image
        case video
        case file
    }

    /// `image` first, then `thumbnail` when present: the message's files in that order.
    let files: [UploadedFile]
    let userId: Int64
    let channelId: Int64
    let kind: Kind
    let fileType: FileType

    /// /v1's rules (5 MB per file, kinds by content and extension) for the two file parts; an
    /// oversized part is HTTP 413 (the edge's answer to an oversized body), and the app's part
    /// names carry no extension, so the kind comes from the content.
    static let limits: UploadLimits = {
        var limits = UploadLimits(fileFields: ["image", "thumbnail"], maxFiles: 2, maxFileBytes: 5 * 1024 * 1024)
        limits.fileTooLargeStatus = .contentTooLarge
        limits.kindFromContent = true
        return limits
    }()

    /// Streams the form to the chat volume (the caller removes the files when it refuses them).
    static func read(_ request: Request, into files: ChatFiles) async throws -> (fields: [String: String], files: [UploadedFile]) {
        guard request.isMultipart else { throw SmoothError.invalidInput }
        return try await request.streamMultipart(into: files.directory.path, limits: limits)
    }

    /// The form's values, or 2100 for anything missing or malformed (one `image`, at most one
    /// `thumbnail`, integer ids, known `type` and `fileType`).
    init(fields: [String: String], files: [UploadedFile]) throws {
        let images = files.filter { $0.field == "image" }
        let thumbnails = files.filter { $0.field == "thumbnail" }
        guard images.count == 1, thumbnails.count <= 1 else { throw SmoothError.invalidInput }
        func integer(_ name: String) throws -> Int64 {
            guard let value = fields[name].flatMap({ IntegerAlias.parse($0.trimmingCharacters(in: .whitespaces)) }) else {
                throw SmoothError.invalidInput
            }
            return value
        }
        guard let kind = fields["type"].flatMap(Kind.init(rawValue:)), let fileType = fields["fileType"].flatMap(FileType.init(rawValue:)) else {
            throw SmoothError.invalidInput
        }
        if let community = fields["communityId"], !community.isEmpty, IntegerAlias.parse(community) == nil { throw SmoothError.invalidInput }
        self.files = images + thumbnails
        userId = try integer("userId")
        channelId = try integer("channelId")
        self.kind = kind
        self.fileType = fileType
    }
}
