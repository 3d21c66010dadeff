import ClientContract
import Events
import Foundation
import Hummingbird
import ServiceKit
import Uploads

/// The fields of a message send: multipart `content` (text/plain) and up to 5 `files` parts of at
/// most 5 MB each (WSX, AMOR; streamed to the chat volume as they arrive), or JSON /
/// form-urlencoded `{content}`; plus the additive `nonce` (a client's retry key).
struct MessageForm: Sendable {
    var content: String?
    var files: [UploadedFile]
    var nonce: String?
    /// The message this one replies to (additive).
    var parentId: String?

    /// Message text: 10 000 characters, 40 000 bytes.
    static let contentLimit = TextLimit("content", characters: 10_000)
    /// A client's retry key: 64 characters, 256 bytes.
    static let nonceLimit = TextLimit("nonce", characters: 64)
    static let limits = UploadLimits(fileField: "files", maxFiles: 5, maxFileBytes: 5 * 1024 * 1024)

    private struct TextBody: Decodable {
        var content: String?
        var nonce: String?
        var parent_id: String?
    }

    static func read(_ request: Request, context: some RequestContext, files: ChatFiles) async throws -> MessageForm {
        if request.isMultipart {
            let (fields, uploaded) = try await request.streamMultipart(into: files.directory.path, limits: limits)
            return MessageForm(content: fields["content"], files: uploaded, nonce: fields["nonce"], parentId: fields["parent_id"])
        }
        let body = try await request.decodeBody(as: TextBody.self, context: context)
        return MessageForm(content: body.content, files: [], nonce: body.nonce, parentId: body.parent_id)
    }

    /// What to store (content nil when only files are sent); E11 for an empty message, an
    /// oversized one, a bad nonce or a parent that is not an id.
    func validated() throws -> MessageDraft {
        let content = try Self.validatedContent(content, hasFiles: !files.isEmpty)
        let nonce = nonce?.trimmingCharacters(in: .whitespaces)
        if let nonce, nonce.isEmpty || !Self.nonceLimit.allows(nonce) { throw APIError.badRequest("nonce must be 1 to 64 characters (256 bytes)") }
        var parent: MessageID?
        if let parentId, !parentId.isEmpty {
            guard let id = MessageID(parentId) else { throw APIError.badRequest("parent_id is not an id") }
            parent = id
        }
        return MessageDraft(content: content, nonce: nonce, parentId: parent)
    }

    /// A message text as stored: nil when blank (allowed only with files); E11 when blank without
    /// files or over the limit (in characters or in bytes).
    static func validatedContent(_ content: String?, hasFiles: Bool) throws -> String? {
        if let content { try contentLimit.check(content) }
        let hasText = content.map { !$0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty } ?? false
        guard hasText || hasFiles else { throw APIError.badRequest("content or files are required") }
        return hasText ? content : nil
    }
}
