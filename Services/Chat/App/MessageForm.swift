import Foundation
import Hummingbird
import ServiceKit

/// The fields of a message send: multipart `content` (text/plain) and `files` parts (WSX, AMOR),
/// or JSON / form-urlencoded `{content}`; plus the additive `nonce` (a client's retry key).
struct MessageForm: Sendable {
    var content: String?
    var fileCount: Int
    var nonce: String?

    static let maxContentLength = 10_000
    static let maxNonceLength = 64

    private struct TextBody: Decodable {
        var content: String?
        var nonce: String?
    }

    static func read(_ request: Request, context: some RequestContext) async throws -> MessageForm {
        if request.isMultipart {
            let parts = try await request.multipartParts(limit: 26 * 1024 * 1024)
            return MessageForm(
                content: parts.first { $0.name == "content" }?.text,
                fileCount: parts.filter { $0.name == "files" && $0.body.readableBytes > 0 }.count,
                nonce: parts.first { $0.name == "nonce" }?.text
            )
        }
        let body = try await request.decodeBody(as: TextBody.self, context: context)
        return MessageForm(content: body.content, fileCount: 0, nonce: body.nonce)
    }

    /// The content to store (nil when only files are sent); E11 for an empty message, an
    /// oversized one, or a bad nonce.
    func validated() throws -> (content: String?, nonce: String?) {
        let hasText = content.map { !$0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty } ?? false
        guard fileCount == 0 else {
            // File uploads (streamed to the chat volume, served to members) are not built yet.
            throw APIError.badRequest("file attachments are not supported yet")
        }
        guard hasText else { throw APIError.badRequest("content is required") }
        if let content, content.count > Self.maxContentLength { throw APIError.badRequest("content is over \(Self.maxContentLength) characters") }
        let nonce = nonce?.trimmingCharacters(in: .whitespaces)
        if let nonce, nonce.isEmpty || nonce.count > Self.maxNonceLength { throw APIError.badRequest("nonce must be 1 to 64 characters") }
        return (hasText ? content : nil, nonce)
    }
}
