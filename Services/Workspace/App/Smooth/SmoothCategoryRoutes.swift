import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit
import Uploads

/// `/community-server/category...`. As in Smooth, any member creates, renames and moves the
/// categories they see; a new category goes first. Deleting one (with its channels) is the
/// owner's: Smooth let any member do it, which the suite does not copy.
extension WorkspaceAPI {
    /// Mounted at `/smooth/community/category`.
    var smoothCategoryRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.post { request, context -> SmoothDone in
            let me = context.identity
            let body = try await request.decodeBody(as: SmoothCategoryBody.self, context: context)
            let name = try SmoothName.valid(body.name)
            let isPublic = body.isPublic ?? true
            try await smoothWrite { c in
                let community = try await requireCommunity(body.communityId, me, c, lock: true)
                let named = isPublic ? [] : try await communityMembers((body.members ?? []) + (body.menbers ?? []), of: community.id, c)
                let all = try await categories.all(in: community.id, c).map(\.id)
                let category = try await categories.insert(.generate(), workspace: community.id, name: name, isPublic: isPublic, c)
                try await categories.place([category.id] + all, c)
                if !isPublic {
                    try await categories.addMembers(Array(Set(named + [me, community.ownerId])), to: category.id, c)
                }
            }
            return SmoothDone()
        }
        routes.patch("name") { request, context -> SmoothDone in
            let me = context.identity
            let body = try await request.decodeBody(as: SmoothRenameBody.self, context: context)
            let name = try SmoothName.valid(body.name)
            try await smoothWrite { c in
                let (_, category) = try await visibleCategory(body.id, me, c)
                _ = try await categories.rename(category.id, name: name, c)
            }
            return SmoothDone()
        }
        routes.patch("location") { request, context -> SmoothDone in
            let me = context.identity
            let body = try await request.decodeBody(as: SmoothLocationBody.self, context: context)
            try await smoothWrite { c in
                let (view, category) = try await visibleCategory(body.id, me, c)
                var next: CategoryID?
                if let alias = body.next, alias != 0 {
                    guard let target = view.category(alias: alias) else { throw SmoothError.invalidNextNode }
                    next = target.id
                }
                try await categories.place(try smoothPlacing(category.id, after: next, in: view.allCategories.map(\.id)), c)
            }
            return SmoothDone()
        }
        routes.delete(":category") { request, context -> SmoothDone in
            let me = context.identity
            let alias = try pathAlias(context, "category", else: .invalidCategory)
            let covers = try await smoothWrite { c -> [String] in
                let (view, category) = try await visibleCategory(alias, me, c)
                guard view.community.ownerId == me else { throw SmoothError.noPermission }
                var covers: [String] = []
                for channel in try await channels.inCategory(category.id, c) { covers += try await deleteWithThreads(channel, c) }
                try await categories.delete(category.id, c)
                return covers
            }
            covers.forEach(images.remove)
            return SmoothDone()
        }
        return routes
    }

    /// The category with this alias in a community `user` belongs to (locked) and can see it in,
    /// with the user's view of the community; else 4003.
    func visibleCategory(_ alias: Int64?, _ user: UserID, _ c: PostgresConnection) async throws -> (CommunityView, CategoryRecord) {
        guard let alias, let community = try await communityOf(categoryAlias: alias, member: user, c) else { throw SmoothError.invalidCategory }
        let view = try await communityView(community, for: user, c)
        guard let category = view.category(alias: alias) else { throw SmoothError.invalidCategory }
        return (view, category)
    }

    /// The community (locked) holding the category with this alias, when `user` is a member.
    func communityOf(categoryAlias alias: Int64, member user: UserID, _ c: PostgresConnection) async throws -> WorkspaceRecord? {
        guard let id = try await categories.workspace(ofAlias: alias, c) else { return nil }
        return try await workspaces.find(id, member: user, lock: true, kind: .community, c)
    }
}
