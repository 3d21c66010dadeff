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
        routes.post("thread") { request, context in try await createSmoothThread(request, context) }
        routes.patch("location") { request, context -> SmoothDone in
            let me = context.identity
            let body = try await request.decodeBody(as: SmoothLocationBody.self, context: context)
            try await smoothWrite { c in
                let (view, channel) = try await visibleChannel(body.id, me, c)
                guard !channel.isThread else { throw SmoothError.invalidChannel }  // a thread follows its channel
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
            let covers = try await smoothWrite { c -> [String] in
                let (view, channel) = try await visibleChannel(alias, me, c)
                // The owner deletes any channel; a thread's creator their thread too.
                guard view.community.ownerId == me || (channel.isThread && channel.ownerId == me) else { throw SmoothError.noPermission }
                return try await deleteWithThreads(channel, c)
            }
            covers.forEach(images.remove)
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

    /// `POST /channel/thread` `{id: channelId, name}` → the thread (`parent` = the channel,
    /// `username` = its creator). Any member who sees a text channel opens one; threads are not
    /// nested (1400 under a thread or a voice channel, 4004 for a channel not seen, 1400 when the
    /// channel has a thread of that name).
    private func createSmoothThread(_ request: Request, _ context: AuthenticatedContext) async throws -> SmoothResponse<SmoothChannel> {
        let me = context.identity
        let body = try await request.decodeBody(as: SmoothThreadBody.self, context: context)
        let name = try SmoothName.valid(body.name)
        return SmoothResponse(
            try await smoothWrite { c in
                let (view, parent) = try await visibleChannel(body.id, me, c)
                guard !parent.isThread, parent.type == .text else { throw SmoothError.badRequest }
                guard let thread = try await insertThread(name, under: parent, in: .community, owner: me, c) else { throw SmoothError.badRequest }
                let category = view.categories.first { $0.id == parent.categoryId }
                var answer = SmoothChannel(thread, categoryAlias: category?.alias ?? 0)
                answer.parent = parent.alias
                answer.username = try await workspaces.member(me, of: view.community.id, c)?.nickname
                return answer
            })
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
                        createdAt: channel.createdAt, alias: channel.alias, joinable: false), c)
                audience.removeAll { $0 == me }
                for user in [me] + audience where try await channels.addMember(channel.id, user, c) {
                    try await emit(WorkspaceEvents.ChannelMemberJoined(workspaceId: community.id, channelId: channel.id, userId: user), c)
                }
                return SmoothChannel(channel, categoryAlias: category.alias)
            })
    }
}
