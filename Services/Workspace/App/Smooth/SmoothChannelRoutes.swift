import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit
import Uploads

/// `/community-server/channel...`. As in Smooth, any member creates channels in the categories
/// they see (a new channel goes first in its category) and moves the channels they see; only
/// the owner deletes one. A channel in a private category is private (asking for a public one
/// there, or moving a public channel into one, is 4012).
extension WorkspaceAPI {
    /// Mounted at `/smooth/community/channel`.
    var smoothChannelRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.post { request, context in try await createSmoothChannel(request, context) }
        routes.patch("location") { request, context -> SmoothDone in
            let me = context.identity
            let body = try await request.decodeBody(as: SmoothLocationBody.self, context: context)
            try await smoothWrite { c in
                let (view, channel) = try await visibleChannel(body.id, me, c)
                var target = channel.categoryId
                if let alias = body.categoryId, alias != 0 {
                    guard let category = view.category(alias: alias) else { throw SmoothError.invalidCategory }
                    if !category.isPublic && channel.isPublic { throw SmoothError.publicState }
                    target = category.id
                }
                var next: ChannelID?
                if let alias = body.next, alias != 0 {
                    guard let after = view.channel(alias: alias), after.categoryId == target else { throw SmoothError.invalidNextNode }
                    next = after.id
                }
                let order = try smoothPlacing(channel.id, after: next, in: try await channels.inCategory(target, c).map(\.id))
                try await channels.place(order, in: target, c)
                if target != channel.categoryId {
                    try await channels.place(try await channels.inCategory(channel.categoryId, c).map(\.id), in: channel.categoryId, c)
                }
            }
            return SmoothDone()
        }
        routes.delete(":channel") { request, context -> SmoothDone in
            let me = context.identity
            let alias = try pathAlias(context, "channel", else: .invalidChannel)
            let cover = try await smoothWrite { c -> String? in
                let (view, channel) = try await visibleChannel(alias, me, c)
                guard view.community.ownerId == me else { throw SmoothError.noPermission }
                try await deleteCommunityChannel(channel, c)
                return channel.coverImage
            }
            images.remove(cover)
            return SmoothDone()
        }
        return routes
    }

    /// The channel with this alias in a community `user` belongs to (locked) and can see it in,
    /// with the user's view of the community; else 4004.
    func visibleChannel(_ alias: Int64?, _ user: UserID, _ c: PostgresConnection) async throws -> (CommunityView, ChannelRecord) {
        guard let alias, let id = try await channels.workspace(ofAlias: alias, c),
            let community = try await workspaces.find(id, member: user, lock: true, kind: .community, c)
        else { throw SmoothError.invalidChannel }
        let view = try await communityView(community, for: user, c)
        guard let channel = view.channel(alias: alias) else { throw SmoothError.invalidChannel }
        return (view, channel)
    }

    /// `POST /channel` `{id: categoryId, name, type, public, members?}` → the channel. A public
    /// channel's members are all the community's; a private one's the members named (who must be
    /// in the community and, in a private category, on its list: 4010), its creator and the owner.
    private func createSmoothChannel(_ request: Request, _ context: AuthenticatedContext) async throws -> SmoothResponse<SmoothChannel> {
        let me = context.identity
        let body = try await request.decodeBody(as: SmoothChannelBody.self, context: context)
        let name = try SmoothName.valid(body.name)
        guard let type = body.type.flatMap({ ChannelType(rawValue: $0.uppercased()) }) else { throw SmoothError.badRequest }
        let isPublic = body.isPublic ?? true
        return SmoothResponse(
            try await smoothWrite { c in
                let (view, category) = try await visibleCategory(body.id, me, c)
                let community = view.community
                if !category.isPublic && isPublic { throw SmoothError.publicState }
                var audience: [UserID]
                if isPublic {
                    audience = try await workspaces.members(of: community.id, c).map(\.userId)
                } else {
                    let named = try await communityMembers(body.members ?? [], of: community.id, c)
                    if !category.isPublic {
                        let list = Set(try await categories.members(of: category.id, c))
                        guard named.allSatisfy(list.contains) else { throw SmoothError.notInCommunity }
                    }
                    audience = Array(Set(named + [me, community.ownerId])).sorted()
                }
                let existing = try await channels.inCategory(category.id, c).map(\.id)
                guard
                    let channel = try await channels.insert(
                        .generate(), workspace: community.id, category: category.id, name: name, description: nil, coverImage: nil, owner: me,
                        isDefault: false, type: type, isPublic: isPublic, c)
                else { throw SmoothError.badRequest }
                try await channels.place([channel.id] + existing, in: category.id, c)
                try await emit(
                    WorkspaceEvents.ChannelCreated(
                        workspaceId: community.id, channelId: channel.id, name: channel.name, description: nil, ownerId: me, isDefault: false,
                        createdAt: channel.createdAt, alias: channel.alias), c)
                audience.removeAll { $0 == me }
                for user in [me] + audience where try await channels.addMember(channel.id, user, c) {
                    try await emit(WorkspaceEvents.ChannelMemberJoined(workspaceId: community.id, channelId: channel.id, userId: user), c)
                }
                return SmoothChannel(channel, categoryAlias: category.alias)
            })
    }
}
