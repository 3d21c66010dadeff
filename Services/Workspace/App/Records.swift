import Events
import Foundation

struct WorkspaceRecord: Sendable, Equatable {
    var id: WorkspaceID
    var name: String
    var description: String?
    var coverImage: String?
    var ownerId: UserID
    var createdAt: Date
}

struct ChannelRecord: Sendable, Equatable {
    var id: ChannelID
    var workspaceId: WorkspaceID
    var categoryId: CategoryID
    var name: String
    var description: String?
    var coverImage: String?
    var ownerId: UserID
    var isDefault: Bool
    var createdAt: Date
}

struct MemberRecord: Sendable, Equatable {
    var userId: UserID
    var email: String
    var nickname: String
    var profileImage: String?
}

struct CategoryRecord: Sendable, Equatable {
    var id: CategoryID
    var name: String
}

struct InviteRecord: Sendable, Equatable {
    var code: String
    var workspaceId: WorkspaceID
    var createdBy: UserID
    var maxUses: Int?
    var uses: Int
    var expiresAt: Date?
    var revoked: Bool
    var createdAt: Date
}
