import ClientContract
import Events
import Foundation
import PostgresNIO
import ServiceKit

/// What one user sees of a community, and the membership rules that keep chat's read model in
/// step with it.
///
/// Visibility: a private category is seen by its member list (its creator, the members named at
/// creation) and the community's owner; a private channel by its channel members and the owner,
/// inside a category the user sees. Chat decides who may read and write a channel from channel
/// membership (`workspace.v1`), so channel membership follows visibility: every member of the
/// community is a member of each public channel of a public category; a private channel's
/// members are the ones named, its creator and the owner.
struct CommunityView: Sendable {
    let community: WorkspaceRecord
    /// Every category in order (moves are placed in the whole list).
    let allCategories: [CategoryRecord]
    /// The categories the user sees, in order.
    let categories: [CategoryRecord]
    /// The channels the user sees, in layout order (by category, then position).
    let channels: [ChannelRecord]

    func category(alias: Int64?) -> CategoryRecord? { categories.first { $0.alias == alias } }
    func channel(alias: Int64?) -> ChannelRecord? { channels.first { $0.alias == alias } }
    /// The channels of a category in order; threads are listed under their channel.
    func channels(in category: CategoryID) -> [ChannelRecord] { channels.filter { $0.categoryId == category && !$0.isThread } }
    /// A channel's threads, oldest first.
    func threads(of channel: ChannelID) -> [ChannelRecord] {
        channels.filter { $0.parentId == channel }.sorted { ($0.createdAt, $0.alias) < ($1.createdAt, $1.alias) }
    }

    /// `GET /community/{id}`'s answer.
    var detail: SmoothCommunityDetail {
        SmoothCommunityDetail(
            id: community.alias, name: community.name,
            categories: categories.map { category in
                SmoothCategory(
                    id: category.alias, name: category.name,
                    channels: channels(in: category.id).map { SmoothChannel($0, categoryAlias: category.alias, threads: threads(of: $0.id)) })
            })
    }
}

extension WorkspaceAPI {
    static let smoothTextCategoryName = "채팅 채널"
    static let smoothVoiceCategoryName = "음성 채널"

    /// The community as `user` sees it.
    func communityView(_ community: WorkspaceRecord, for user: UserID, _ c: PostgresConnection) async throws -> CommunityView {
        let all = try await categories.all(in: community.id, c)
        let allChannels = try await channels.all(in: community.id, c)
        let isOwner = community.ownerId == user
        let categoryLists = isOwner ? [] : try await categories.memberships(of: user, in: community.id, c)
        let channelLists = isOwner ? [] : Set(try await channels.mine(in: community.id, user: user, c).map(\.id))
        let visible = all.filter { isOwner || $0.isPublic || categoryLists.contains($0.id) }
        let visibleIds = Set(visible.map(\.id))
        return CommunityView(
            community: community, allCategories: all, categories: visible,
            channels: allChannels.filter { visibleIds.contains($0.categoryId) && (isOwner || $0.isPublic || channelLists.contains($0.id)) })
    }

    /// The channels every member belongs to: public ones in public categories.
    func openChannels(of community: WorkspaceID, _ c: PostgresConnection) async throws -> [ChannelID] {
        let open = Set(try await categories.all(in: community, c).filter(\.isPublic).map(\.id))
        return try await channels.all(in: community, c).filter { $0.isPublic && open.contains($0.categoryId) }.map(\.id)
    }

    /// Adds `user` to the locked community and to every open channel (4013 when already a
    /// member); publishes `workspace.member-joined` as `/v1` joins do.
    func joinCommunity(_ user: UserID, _ community: WorkspaceID, via: WorkspaceEvents.MemberJoined.Via, _ c: PostgresConnection) async throws {
        guard try await workspaces.addMember(community, user, c) else { throw SmoothError.alreadyMember }
        var joined: [ChannelID] = []
        for channel in try await openChannels(of: community, c) where try await channels.addMember(channel, user, c) {
            joined.append(channel)
        }
        try await emit(WorkspaceEvents.MemberJoined(workspaceId: community, userId: user, channelIds: joined, via: via), c)
    }

    /// Takes `user` out of the locked community: the channels they own go to `heir`, they leave
    /// every channel and private category, then the community (`workspace.member-left`).
    func removeFromCommunity(_ user: UserID, _ community: WorkspaceID, heir: UserID, _ c: PostgresConnection) async throws {
        for channel in try await channels.all(in: community, c) where channel.ownerId == user {
            _ = try await channels.setOwner(channel.id, heir, c)
            try await emit(WorkspaceEvents.ChannelOwnerChanged(workspaceId: community, channelId: channel.id, previousOwnerId: user, ownerId: heir), c)
        }
        let left = try await channels.removeFromAll(in: community, user: user, c)
        try await categories.removeFromAll(in: community, user: user, c)
        try await workspaces.removeMember(community, user, c)
        try await emit(WorkspaceEvents.MemberLeft(workspaceId: community, userId: user, channelIds: left), c)
    }

    /// A new owner sees everything: they join every private category's list and every channel
    /// they were not in.
    func admitEverywhere(_ owner: UserID, _ community: WorkspaceID, _ c: PostgresConnection) async throws {
        for category in try await categories.all(in: community, c) where !category.isPublic {
            try await categories.addMembers([owner], to: category.id, c)
        }
        for channel in try await channels.all(in: community, c) where try await channels.addMember(channel.id, owner, c) {
            try await emit(WorkspaceEvents.ChannelMemberJoined(workspaceId: community, channelId: channel.id, userId: owner), c)
        }
    }

    /// The users with these aliases, all members of the community (4010 otherwise).
    func communityMembers(_ aliases: [Int64], of community: WorkspaceID, _ c: PostgresConnection) async throws -> [UserID] {
        let unique = Array(Set(aliases))
        guard !unique.isEmpty else { return [] }
        let found = try await workspaces.members(of: community, aliases: unique, c)
        guard found.count == unique.count else { throw SmoothError.notInCommunity }
        return unique.compactMap { found[$0] }
    }

    /// Smooth's linked-list move on the stored order: "after `next`, 0 = first"; `next` must be
    /// in `target` (4011), and an item already there is 4009.
    func smoothPlacing<ID: Equatable>(_ item: ID, after next: ID?, in target: [ID]) throws -> [ID] {
        do {
            return try Placement.move(item, after: next, in: target)
        } catch .invalidNext {
            throw SmoothError.invalidNextNode
        } catch .alreadyLocated {
            throw SmoothError.alreadyLocated
        }
    }
}

/// Names of communities, categories and channels: trimmed, 1–100 characters on one line (Smooth's
/// limit), else 1400.
enum SmoothName {
    static let limit = TextLimit("name", characters: 100)

    static func valid(_ value: String?) throws -> String {
        let name = value?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        guard !name.isEmpty, limit.allows(name), !name.contains(where: \.isNewline) else { throw SmoothError.badRequest }
        return name
    }
}
