import ClientContract
import Events
import Foundation
import ServiceKit

/// A message as Smooth's history shows it (client contract §2.1, `MessageResponse` of its chat
/// server): every key present, `null` where there is nothing; `userId` the sender's integer
/// alias; `time` without a zone (Smooth's client appends `Z` itself). A message with files shows
/// the first as `message` and the second (an upload's thumbnail) as `thumbnail`, both absolute
/// URLs the app loads without a token.
struct SmoothMessage: Encodable, Sendable {
    let id: String
    let name: String
    @SmoothNull var profileImage: String?
    @SmoothNull var userId: Int64?
    @SmoothNull var message: String?
    @SmoothNull var thumbnail: String?
    /// `image` / `video` / `file` for an attachment, `reply` for an answer, else null.
    @SmoothNull var fileType: String?
    /// Smooth's message `type`; history has none.
    @SmoothNull var type: String? = nil
    let time: String
    @SmoothNull var parentId: String?
    @SmoothNull var parentName: String?
    @SmoothNull var parentContent: String?

    /// What Smooth shows for a reply whose parent is gone (its server's words).
    static let deletedParentContent = "삭제된 메세지입니다."

    init(_ stored: StoredMessage, parent: ParentSummary?, links: SmoothFileLinks) {
        id = stored.id.description
        name = stored.sender.nickname
        profileImage = stored.sender.profileImage
        userId = stored.sender.alias
        time = Timestamp.formatWithoutZone(stored.createdAt)
        thumbnail = stored.files.dropFirst().first.map(links.url)
        if let file = stored.files.first {
            message = links.url(file)
            fileType = AttachmentKind.of(path: file)
        } else {
            message = stored.content
            fileType = stored.parentId == nil ? nil : "reply"
        }
        parentId = stored.parentId?.description
        if stored.parentId != nil {
            if let parent, !parent.isDeleted {
                parentName = parent.senderName
                parentContent = parent.content
            } else {
                parentName = ""
                parentContent = Self.deletedParentContent
            }
        } else {
            parentName = nil
            parentContent = nil
        }
    }
}
