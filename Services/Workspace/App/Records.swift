import Events
import Foundation

struct WorkspaceRecord: Sendable, Equatable {
    var id: WorkspaceID
    var name: String
    var description: String?
    var coverImage: String?
    var ownerId: UserID
    var createdAt: Date
    /// The integer id legacy clients see (`Database.IntegerAlias`).
    var alias: Int64 = 0
}

/// What a workspace row is: a `/v1` workspace, or a Smooth community (the Discord-style app's
/// "server", docs/smooth-api.md). Each surface sees only its own kind.
enum WorkspaceKind: String, Sendable {
    case workspace
    case community

    /// Whether its members join a channel by reading it (`ChannelJoins`): in a `/v1` workspace
    /// every channel is visible to every member; a Smooth community has private channels and
    /// its own join.
    var joinsByReading: Bool { self == .workspace }
}

/// A channel's type: Smooth has text and voice channels; `/v1` channels are all text.
enum ChannelType: String, Sendable, CaseIterable {
    case text = "TEXT"
    case voice = "VOICE"
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
    var alias: Int64 = 0
    var type: ChannelType = .text
    /// Private channels are visible to their members (and the owner) only (Smooth).
    var isPublic: Bool = true
    /// A thread's channel (threads are one level deep); nil for a channel.
    var parentId: ChannelID? = nil

    var isThread: Bool { parentId != nil }
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
    var alias: Int64 = 0
    /// Private categories are visible to their members (and the owner) only (Smooth).
    var isPublic: Bool = true
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
    var alias: Int64 = 0
}
