import ClientContract
import Database
import Events
import Foundation
import HTTPTypes
import Hummingbird
import PostgresNIO
import ServiceKit

/// Gen A of the SeSAC workspace API (Lilac, client contract §1.9, docs/generation-a.md) at
/// `/gena/v1/workspaces` (the gateway maps Gen A requests there). Each route names its workspace
/// by integer alias, its channel by name and its user by alias; those become the ids Gen B's
/// routes read, the Gen B code runs unchanged (checks, events, errors), and its answer is shown
/// in Gen A's shape.
extension WorkspaceAPI {
    /// Mounted at `/gena/v1/workspaces`.
    var generationARoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get { _, context -> [GenerationAWorkspace] in
            let me = context.identity
            return try await read { c in
                let all = try await workspaces.list(for: me, c).map(WorkspaceResponse.init)
                return try await shown(all, c)
            }
        }
        routes.post { request, context in try await shown(try await create(request, context)) }
        routes.get(":workspace") { _, context in
            let context = try await generationB(context)
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            return try await read { c -> GenerationAWorkspace in
                let workspace = try await requireMember(id, me, c)
                let detail = WorkspaceDetailResponse(
                    workspace, channels: try await channels.all(in: id, c).withoutThreads, members: try await workspaces.members(of: id, c))
                return GenerationAWorkspace(detail, try await book(detail, c))
            }
        }
        routes.put(":workspace") { request, context in try await shown(try await edit(request, try await generationB(context))) }
        routes.delete(":workspace") { request, context in try await delete(request, try await generationB(context)) }
        routes.get(":workspace/search") { request, context in
            let context = try await generationB(context)
            let detail = try await search(request, context)
            return try await read { c in GenerationAWorkspace(detail, try await book(detail, c)) }
        }
        routes.get(":workspace/leave") { request, context in
            let remaining = try await leave(request, try await generationB(context))
            return try await read { c in try await shown(remaining, c) }
        }
        routes.put(":workspace/change/admin/:user") { _, context in
            let context = try await generationB(context)
            return try await shown(try await transfer(context, to: try pathID(context, "user")))
        }
        routes.post(":workspace/members") { request, context in try await shown(try await invite(request, try await generationB(context))) }
        routes.get(":workspace/members") { _, context in
            let context = try await generationB(context)
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            return try await read { c -> [GenerationAMember] in
                _ = try await requireMember(id, me, c)
                return try await shown(try await workspaces.members(of: id, c).map(MemberResponse.init), c)
            }
        }
        routes.get(":workspace/members/:user") { _, context in
            let context = try await generationB(context)
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            let other: UserID = try pathID(context, "user")
            return try await read { c -> GenerationAMember in
                _ = try await requireMember(id, me, c)
                guard let member = try await workspaces.member(other, of: id, c) else { throw APIError.notFound("member") }
                return try await shown([MemberResponse(member)], c)[0]
            }
        }
        addGenerationAChannelRoutes(to: routes)
        return routes
    }

    /// The context with the Gen B parameters Gen B's code reads: `workspace` for the alias in the
    /// path, `channel` for the channel name, `user` for the user alias. What names nothing stays
    /// unset, so Gen B's code answers E13 as for an unknown id.
    func generationB(_ context: AuthenticatedContext) async throws -> AuthenticatedContext {
        let aliases = GenerationAAliases(logger: logger)
        let parameters = context.parameters
        let workspaceAlias = parameters.get("workspace").flatMap(IntegerAlias.parse)
        let channelName = parameters.get("channel").map { $0.removingPercentEncoding ?? $0 }
        let userAlias = parameters.get("user").flatMap(IntegerAlias.parse)
        let (workspace, channel, user) = try await read { c -> (WorkspaceID?, ChannelID?, UserID?) in
            let workspace = try await workspaceAlias.asyncMap { try await aliases.workspace(alias: $0, c) } ?? nil
            let channel = try await workspace.flatMap { w in channelName.map { (w, $0) } }.asyncMap { try await aliases.channel(named: $1, in: $0, c) } ?? nil
            let user = try await userAlias.asyncMap { try await aliases.user(alias: $0, c) } ?? nil
            return (workspace, channel, user)
        }
        var translated = context
        translated.coreContext.parameters["workspace"] = workspace.map { Substring($0.description) } ?? "-"
        if channelName != nil { translated.coreContext.parameters["channel"] = channel.map { Substring($0.description) } ?? "-" }
        if parameters.get("user") != nil { translated.coreContext.parameters["user"] = user.map { Substring($0.description) } ?? "-" }
        return translated
    }

    // MARK: Gen B answers in Gen A's shape

    func shown(_ workspace: WorkspaceResponse) async throws -> GenerationAWorkspace {
        try await read { c in try await shown([workspace], c)[0] }
    }

    func shown(_ all: [WorkspaceResponse], _ c: PostgresConnection) async throws -> [GenerationAWorkspace] {
        let book = try await GenerationAAliases(logger: logger).book(
            workspaces: all.map(\.workspace_id), channels: [], users: all.map(\.owner_id), c)
        return all.map { GenerationAWorkspace($0, book) }
    }

    func shown(_ members: [MemberResponse], _ c: PostgresConnection) async throws -> [GenerationAMember] {
        let book = try await GenerationAAliases(logger: logger).book(workspaces: [], channels: [], users: members.map(\.user_id), c)
        return members.map { GenerationAMember($0, alias: book.users[$0.user_id]) }
    }

    func shown(_ member: MemberResponse) async throws -> GenerationAMember {
        try await read { c in try await shown([member], c)[0] }
    }

    func book(_ detail: WorkspaceDetailResponse, _ c: PostgresConnection) async throws -> AliasBook {
        try await GenerationAAliases(logger: logger).book(
            workspaces: [detail.workspace_id], channels: detail.channels.map(\.channel_id),
            users: [detail.owner_id] + detail.channels.map(\.owner_id) + detail.workspaceMembers.map(\.user_id), c)
    }
}

extension Optional {
    /// `map` with an async transform.
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        switch self {
        case .some(let value): try await transform(value)
        case .none: nil
        }
    }
}
