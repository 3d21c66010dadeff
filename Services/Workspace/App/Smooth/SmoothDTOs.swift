import Events
import Foundation
import ServiceKit

// Smooth's shapes (client contract §2.1, §4 item 3): integer ids, camelCase keys, and every key
// present — a missing value is an explicit `null`, as Smooth's Spring servers wrote them. Enum
// strings are exactly TEXT/VOICE, OWNER/NONE and online/offline; a channel's `parent` is null and
// its `threads` the `{id, name}` of its threads (a thread's `parent` is its channel's id).

/// `{id, name, icon}`: a community in the list, and the answer to create and join.
struct SmoothCommunity: Encodable, Sendable {
    var id: Int64
    var name: String
    @SmoothNull var icon: String?

    init(_ community: WorkspaceRecord, _ links: SmoothLinks) {
        id = community.alias
        name = community.name
        icon = links.icon(community.coverImage)
    }
}

/// `GET /community`: the user's communities; `rooms` (DM rooms) are chat's, so empty here.
struct SmoothCommunityList: Encodable, Sendable {
    var rooms: [SmoothCommunity] = []
    var communities: [SmoothCommunity]
}

/// `GET /community/{id}`: the categories the user can see, each with the channels they can see.
struct SmoothCommunityDetail: Encodable, Sendable {
    var id: Int64
    var name: String
    var categories: [SmoothCategory]
}

struct SmoothCategory: Encodable, Sendable {
    var id: Int64
    var name: String
    var channels: [SmoothChannel]
}

/// A channel: `{id, categoryId, username, name, type, public, parent, threads}`.
struct SmoothChannel: Encodable, Sendable {
    var id: Int64
    var categoryId: Int64
    /// Smooth named a thread's creator here; channels have none.
    @SmoothNull var username: String? = nil
    var name: String
    var type: String
    var isPublic: Bool
    /// A thread's channel; null for a channel.
    @SmoothNull var parent: Int64? = nil
    var threads: [SmoothThread] = []

    enum CodingKeys: String, CodingKey {
        case id, categoryId, username, name, type, parent, threads
        case isPublic = "public"
    }

    init(_ channel: ChannelRecord, categoryAlias: Int64, threads: [ChannelRecord] = []) {
        id = channel.alias
        categoryId = categoryAlias
        name = channel.name
        type = channel.type.rawValue
        isPublic = channel.isPublic
        self.threads = threads.map { SmoothThread(id: $0.alias, name: $0.name) }
    }
}

/// A thread in its channel's `threads`.
struct SmoothThread: Encodable, Sendable {
    var id: Int64
    var name: String
}

/// `POST /channel/thread` `{id: channelId, name}`.
struct SmoothThreadBody: Decodable {
    var id: Int64?
    var name: String?
}

/// `GET /community/{id}/member`.
struct SmoothMemberList: Encodable, Sendable {
    var members: [SmoothMember]
}

/// `{id, profileImage, communityName, nickname, code, role, status}`. A member whose integer id or
/// tag has not arrived from auth yet shows `id: 0` and `code: ""` (the client decodes both as
/// non-optional); the suite keeps no per-community nickname, so `communityName` is the nickname.
struct SmoothMember: Encodable, Sendable {
    var id: Int64
    @SmoothNull var profileImage: String?
    var communityName: String
    var nickname: String
    var code: String
    var role: String
    var status: String

    init(_ member: SmoothMemberRecord, owner: UserID, _ links: SmoothLinks) {
        id = member.alias ?? 0
        profileImage = links.profileImage(member.profileImage)
        communityName = member.nickname
        nickname = member.nickname
        code = member.code ?? ""
        role = member.userId == owner ? "OWNER" : "NONE"
        status = member.online ? "online" : "offline"
    }
}

/// `POST /community/invitation`.
struct SmoothInvitationLink: Encodable, Sendable {
    var url: String
}

/// `GET /community/{id}/invitation`.
struct SmoothInvitationList: Encodable, Sendable {
    var invitations: [SmoothInvitation]
}

/// `{invitationId, nickname, userCode, profileImage, inviteCode}`: an invitation and who made it.
struct SmoothInvitation: Encodable, Sendable {
    var invitationId: Int64
    @SmoothNull var nickname: String?
    @SmoothNull var userCode: String?
    @SmoothNull var profileImage: String?
    var inviteCode: String
}

// Request bodies (JSON, or form-urlencoded where the shared decoder reads it).

/// `{id, name}` of the rename endpoints.
struct SmoothRenameBody: Decodable {
    var id: Int64?
    var name: String?
}

/// `{id}`: the community of a new invitation.
struct SmoothIdBody: Decodable {
    var id: Int64?
}

/// `{code}`: an invitation code or the whole link.
struct SmoothJoinBody: Decodable {
    var code: String?
}

/// `{communityId, name, public, members?}`; the iOS client spells the member list `menbers`, so
/// both are read.
struct SmoothCategoryBody: Decodable {
    var communityId: Int64?
    var name: String?
    var isPublic: Bool?
    var members: [Int64]?
    var menbers: [Int64]?

    enum CodingKeys: String, CodingKey { case communityId, name, `public`, members, menbers }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        communityId = try c.decodeIfPresent(Int64.self, forKey: .communityId)
        name = try c.decodeIfPresent(String.self, forKey: .name)
        isPublic = try c.decodeIfPresent(Bool.self, forKey: .public)
        members = try c.decodeIfPresent([Int64].self, forKey: .members)
        menbers = try c.decodeIfPresent([Int64].self, forKey: .menbers)
    }
}

/// `{id: categoryId, name, type, public, members?}`.
struct SmoothChannelBody: Decodable {
    var id: Int64?
    var name: String?
    var type: String?
    var isPublic: Bool?
    var members: [Int64]?

    enum CodingKeys: String, CodingKey { case id, name, type, `public`, members }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decodeIfPresent(Int64.self, forKey: .id)
        name = try c.decodeIfPresent(String.self, forKey: .name)
        type = try c.decodeIfPresent(String.self, forKey: .type)
        isPublic = try c.decodeIfPresent(Bool.self, forKey: .public)
        members = try c.decodeIfPresent([Int64].self, forKey: .members)
    }
}

/// `{id, next, categoryId?}`: place `id` after `next` (0 = first), in `categoryId` for channels.
struct SmoothLocationBody: Decodable {
    var id: Int64?
    var next: Int64?
    var categoryId: Int64?
}
