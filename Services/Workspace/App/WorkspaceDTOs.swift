import ClientContract
import Events
import Foundation
import Hummingbird
import ServiceKit

// Response shapes of the client contract §1.1: snake_case ids, camelCase everything else, dates
// as yyyy-MM-ddTHH:mm:ss.SSSZ, bare top-level arrays. Dates are formatted into strings here rather
// than by the encoder's custom date strategy, which builds a nested encoder per date (measured:
// half the time of a 50-message history response). Optional fields are
// omitted when nil, except `coverImage` on workspaces, which WSX decodes as a non-optional String.

typealias MemberResponse = MemberSummary

extension MemberSummary {
    init(_ member: MemberRecord) {
        self.init(userId: member.userId, email: member.email, nickname: member.nickname, profileImage: member.profileImage)
    }
}

struct WorkspaceResponse: ResponseEncodable, Sendable {
    var workspace_id: WorkspaceID
    var name: String
    var description: String?
    var coverImage: String
    var owner_id: UserID
    var createdAt: String
}

extension WorkspaceResponse {
    init(_ workspace: WorkspaceRecord) {
        workspace_id = workspace.id
        name = workspace.name
        description = workspace.description
        coverImage = workspace.coverImage ?? CoverImages.defaultCoverPath
        owner_id = workspace.ownerId
        createdAt = Timestamp.format(workspace.createdAt)
    }
}

/// `GET /workspaces/{id}` and search: the workspace plus channels and members.
struct WorkspaceDetailResponse: ResponseEncodable, Sendable {
    var workspace_id: WorkspaceID
    var name: String
    var description: String?
    var coverImage: String
    var owner_id: UserID
    var createdAt: String
    var channels: [ChannelResponse]
    var workspaceMembers: [MemberResponse]

    init(_ workspace: WorkspaceRecord, channels: [ChannelRecord], members: [MemberRecord]) {
        let summary = WorkspaceResponse(workspace)
        workspace_id = summary.workspace_id
        name = summary.name
        description = summary.description
        coverImage = summary.coverImage
        owner_id = summary.owner_id
        createdAt = summary.createdAt
        self.channels = channels.map(ChannelResponse.init)
        workspaceMembers = members.map(MemberResponse.init)
    }
}

struct ChannelResponse: ResponseEncodable, Sendable {
    var channel_id: ChannelID
    var name: String
    var description: String?
    var coverImage: String?
    var owner_id: UserID
    var createdAt: String
}

extension ChannelResponse {
    init(_ channel: ChannelRecord) {
        channel_id = channel.id
        name = channel.name
        description = channel.description
        coverImage = channel.coverImage
        owner_id = channel.ownerId
        createdAt = Timestamp.format(channel.createdAt)
    }
}

struct ChannelDetailResponse: ResponseEncodable, Sendable {
    var channel_id: ChannelID
    var name: String
    var description: String?
    var coverImage: String?
    var owner_id: UserID
    var createdAt: String
    var channelMembers: [MemberResponse]

    init(_ channel: ChannelRecord, members: [MemberRecord]) {
        channel_id = channel.id
        name = channel.name
        description = channel.description
        coverImage = channel.coverImage
        owner_id = channel.ownerId
        createdAt = Timestamp.format(channel.createdAt)
        channelMembers = members.map(MemberResponse.init)
    }
}

/// A category with its channels in order (the Discord-style tree).
struct CategoryResponse: ResponseEncodable, Sendable {
    var category_id: CategoryID
    var name: String
    var channels: [ChannelResponse]
}

struct InviteResponse: ResponseEncodable, Sendable {
    var code: String
    var workspace_id: WorkspaceID
    var creator_id: UserID
    var maxUses: Int?
    var uses: Int
    var expiresAt: String?
    var createdAt: String

    init(_ invite: InviteRecord) {
        code = invite.code
        workspace_id = invite.workspaceId
        creator_id = invite.createdBy
        maxUses = invite.maxUses
        uses = invite.uses
        expiresAt = invite.expiresAt.map(Timestamp.format)
        createdAt = Timestamp.format(invite.createdAt)
    }
}

// Request bodies (JSON or form-urlencoded; multipart is read by `WorkspaceForm`).

struct OwnerBody: Decodable { var owner_id: String? }

struct EmailBody: Decodable { var email: String? }

/// `{name}`: a category or a thread.
struct NameBody: Decodable { var name: String? }

/// `next`: the id of the item to place the moved one after, or `0` / `"0"` for first.
struct LocationBody: Decodable {
    var next: String?
    var category_id: String?

    enum CodingKeys: String, CodingKey { case next, category_id }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let number = try? c.decodeIfPresent(Int.self, forKey: .next) {
            next = String(number)
        } else {
            next = try c.decodeIfPresent(String.self, forKey: .next)
        }
        category_id = try c.decodeIfPresent(String.self, forKey: .category_id)
    }
}

struct InviteBody: Decodable {
    var maxUses: Int?
    var expiresInSeconds: Int?
}
