import Events
import Foundation
import HTTPTypes
import Hummingbird
import PostgresNIO
import ServiceKit

/// Discord-style categories (client contract §2.1), in the /v1 conventions: every workspace has
/// at least one category (created with it); channels belong to exactly one. Layout changes are
/// the workspace owner's. Moves use the contract's "place after `next`, 0 = first" semantics
/// and answer with the whole tree so a client can redraw.
extension WorkspaceAPI {
    /// Mounted at `/v1/workspaces/{id}`: `categories...` and `channels/{id}/location`.
    var categoryRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("categories") { request, context -> [CategoryResponse] in
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            return try await read { c in
                _ = try await requireMember(id, me, c)
                return try await tree(id, c)
            }
        }
        routes.post("categories") { request, context -> CategoryResponse in
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            let name = try WorkspaceForm.validName(try await request.decodeBody(as: NameBody.self, context: context).name)
            return try await write { c in
                _ = try await requireOwner(id, me, c, lock: true)
                let category = try await categories.insert(.generate(), workspace: id, name: name, c)
                return CategoryResponse(category_id: category.id, name: category.name, channels: [])
            }
        }
        routes.put("categories/:category") { request, context -> CategoryResponse in
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            let categoryId: CategoryID = try pathID(context, "category")
            let name = try WorkspaceForm.validName(try await request.decodeBody(as: NameBody.self, context: context).name)
            return try await write { c in
                _ = try await requireOwner(id, me, c, lock: true)
                guard let current = try await categories.find(categoryId, in: id, c) else { throw APIError.notFound("category") }
                guard current.name != name else { throw APIError.duplicate("no changes") }
                guard let renamed = try await categories.rename(categoryId, name: name, c) else { throw APIError.notFound("category") }
                return CategoryResponse(
                    category_id: renamed.id, name: renamed.name, channels: try await channels.inCategory(categoryId, c).map(ChannelResponse.init))
            }
        }
        // Deleting a category keeps its channels: they move to the end of the first remaining
        // category. The last category cannot be deleted (E15).
        routes.delete("categories/:category") { request, context -> HTTPResponse.Status in
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            let categoryId: CategoryID = try pathID(context, "category")
            try await write { c in
                _ = try await requireOwner(id, me, c, lock: true)
                let all = try await categories.all(in: id, c)
                guard all.contains(where: { $0.id == categoryId }) else { throw APIError.notFound("category") }
                guard let heir = all.first(where: { $0.id != categoryId }) else { throw APIError.notPossible("the last category cannot be deleted") }
                let moved = try await channels.inCategory(categoryId, c).map(\.id)
                if !moved.isEmpty {
                    try await channels.place(try await channels.inCategory(heir.id, c).map(\.id) + moved, in: heir.id, c)
                }
                try await categories.delete(categoryId, c)
                try await categories.place(all.map(\.id).filter { $0 != categoryId }, c)
            }
            return .ok
        }
        routes.put("categories/:category/location") { request, context -> [CategoryResponse] in
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            let categoryId: CategoryID = try pathID(context, "category")
            let next: CategoryID? = try nextId(try await request.decodeBody(as: LocationBody.self, context: context))
            return try await write { c in
                _ = try await requireOwner(id, me, c, lock: true)
                let all = try await categories.all(in: id, c).map(\.id)
                guard all.contains(categoryId) else { throw APIError.notFound("category") }
                try await categories.place(try placing(categoryId, after: next, in: all), c)
                return try await tree(id, c)
            }
        }
        routes.put("channels/:channel/location") { request, context -> [CategoryResponse] in
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            let channelId: ChannelID = try pathID(context, "channel")
            let body = try await request.decodeBody(as: LocationBody.self, context: context)
            let next: ChannelID? = try nextId(body)
            let targetCategory = try body.category_id.flatMap { $0.isEmpty ? nil : $0 }.map { text -> CategoryID in
                guard let id = CategoryID(text) else { throw APIError.badRequest("category_id is not an id") }
                return id
            }
            return try await write { c in
                _ = try await requireOwner(id, me, c, lock: true)
                let channel = try await requireChannel(channelId, in: id, c)
                guard !channel.isThread else { throw APIError.badRequest("a thread moves with its channel") }
                let category = targetCategory ?? channel.categoryId
                guard try await categories.find(category, in: id, c) != nil else { throw APIError.notFound("category") }
                let target = try await channels.inCategory(category, c).map(\.id)
                try await channels.place(try placing(channelId, after: next, in: target), in: category, c)
                if category != channel.categoryId {
                    try await channels.place(try await channels.inCategory(channel.categoryId, c).map(\.id), in: channel.categoryId, c)
                }
                return try await tree(id, c)
            }
        }
        return routes
    }

    /// The categories in order, each with its channels in order.
    func tree(_ id: WorkspaceID, _ c: PostgresConnection) async throws -> [CategoryResponse] {
        let all = try await channels.all(in: id, c).withoutThreads
        return try await categories.all(in: id, c).map { category in
            CategoryResponse(category_id: category.id, name: category.name, channels: all.filter { $0.categoryId == category.id }.map(ChannelResponse.init))
        }
    }

    /// `next`: `0` / `"0"` / absent = first; otherwise an id (E11 when it is not one).
    private func nextId<Entity>(_ body: LocationBody) throws -> Identifier<Entity>? {
        guard let text = body.next?.trimmingCharacters(in: .whitespaces), !text.isEmpty, text != "0" else { return nil }
        guard let id = Identifier<Entity>(text) else { throw APIError.badRequest("next is not an id") }
        return id
    }

    private func placing<ID: Equatable>(_ item: ID, after next: ID?, in target: [ID]) throws -> [ID] {
        do {
            return try Placement.move(item, after: next, in: target)
        } catch .invalidNext {
            throw APIError.badRequest("invalid next")
        } catch .alreadyLocated {
            throw APIError.duplicate("already located")
        }
    }
}
