import ClientContract
import Foundation
import Hummingbird
import ServiceKit
import Uploads

/// The `name` / `description` / `image` fields of workspace and channel create and edit, read
/// from multipart (WSX), JSON (AMOR's channel create: `{name, description, image:null}`) or a
/// form-urlencoded body. A JSON or form body cannot carry an image.
struct WorkspaceForm: Sendable {
    var name: String?
    var description: String?
    var image: FormPart?
    /// Channels only: the category to create the channel in (default: the first one).
    var categoryId: String?

    /// Workspace, channel and category names: 30 characters, 120 bytes.
    static let nameLimit = TextLimit("name", characters: 30)
    /// Workspace and channel descriptions: 500 characters, 2 000 bytes.
    static let descriptionLimit = TextLimit("description", characters: 500)

    private struct TextBody: Decodable {
        var name: String?
        var description: String?
        var category_id: String?
    }

    static func read(_ request: Request, context: some RequestContext, images: ImageDirectory) async throws -> WorkspaceForm {
        if request.isMultipart {
            let parts = try await request.multipartParts(limit: images.multipartLimit)
            return WorkspaceForm(
                name: parts.first { $0.name == "name" }?.text,
                description: parts.first { $0.name == "description" }?.text,
                image: parts.first { $0.name == "image" && $0.body.readableBytes > 0 },
                categoryId: parts.first { $0.name == "category_id" }?.text
            )
        }
        let body = try await request.decodeBody(as: TextBody.self, context: context)
        return WorkspaceForm(name: body.name, description: body.description, image: nil, categoryId: body.category_id)
    }

    /// The trimmed name: 1–30 characters (at most 120 bytes) on one line, else E11.
    static func validName(_ value: String?) throws -> String {
        let name = value?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        guard !name.isEmpty, nameLimit.allows(name), !name.contains(where: \.isNewline) else {
            throw APIError.badRequest("name must be 1 to \(nameLimit.maxCharacters) characters (\(nameLimit.maxBytes) bytes) on one line")
        }
        return name
    }

    /// The trimmed description; empty means none. Over 500 characters or 2 000 bytes is E11.
    static func validDescription(_ value: String?) throws -> String? {
        guard let text = value?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return nil }
        return try descriptionLimit.check(text)
    }
}
