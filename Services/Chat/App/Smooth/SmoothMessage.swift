import Events
import Foundation

/// A message as Smooth's history shows it (client contract §2.1, `MessageResponse` of its chat
/// server): every key present, `null` where there is nothing; `userId` the sender's integer
/// alias; `time` without a zone (Smooth's client appends `Z` itself).
struct SmoothMessage: Encodable, Sendable {
    let id: String
    let name: String
    let profileImage: String?
    let userId: Int64?
    let message: String?
    let thumbnail: String?
    /// `image` / `video` / `file` for an attachment, `reply` for an answer, else null.
    let fileType: String?
    let time: String
    let parentId: String?
    let parentName: String?
    let parentContent: String?

    /// What Smooth shows for a reply whose parent is gone (its server's words).
    static let deletedParentContent = "삭제된 메세지입니다."

    init(_ stored: StoredMessage, parent: ParentSummary?) {
        id = stored.id.description
        name = stored.sender.nickname
        profileImage = stored.sender.profileImage
        userId = stored.sender.alias
        time = Timestamp.formatWithoutZone(stored.createdAt)
        thumbnail = nil
        if let file = stored.files.first {
            message = file
            fileType = Self.fileType(of: file)
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

    static func fileType(of path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "jpg", "jpeg", "png", "gif", "webp", "heic": "image"
        case "mp4", "mov", "m4v", "webm": "video"
        default: "file"
        }
    }

    enum CodingKeys: String, CodingKey {
        case id, name, profileImage, userId, message, thumbnail, fileType, type, time, parentId, parentName, parentContent
    }

    /// Every key, nulls included (the Java server's Jackson wrote them).
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(name, forKey: .name)
        try c.encode(profileImage, forKey: .profileImage)
        try c.encode(userId, forKey: .userId)
        try c.encode(message, forKey: .message)
        try c.encode(thumbnail, forKey: .thumbnail)
        try c.encode(fileType, forKey: .fileType)
        try c.encodeNil(forKey: .type)
        try c.encode(time, forKey: .time)
        try c.encode(parentId, forKey: .parentId)
        try c.encode(parentName, forKey: .parentName)
        try c.encode(parentContent, forKey: .parentContent)
    }
}
