import ClientContract
import Database
import Events
import Foundation
import HTTPTypes
import Hummingbird
import PostgresNIO
import ServiceKit
import Uploads

/// `/v1/workspaces` and `/v1/workspaces/{id}/...` except channels (client contract §1.3).
extension WorkspaceAPI {
    static let defaultChannelName = "일반"
    static let defaultCategoryName = "채널"

    /// Mounted at `/v1/workspaces`.
    var workspaceRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get { _, context -> [WorkspaceResponse] in
            let me = context.identity
            return try await read { try await workspaces.list(for: me, $0).map(WorkspaceResponse.init) }
        }
        routes.post { request, context in try await create(request, context) }
        routes.get(":workspace") { request, context -> WorkspaceDetailResponse in
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            return try await read { c in
                let workspace = try await requireMember(id, me, c)
                return WorkspaceDetailResponse(
                    workspace, channels: try await channels.all(in: id, c).withoutThreads, members: try await workspaces.members(of: id, c))
            }
        }
        routes.put(":workspace") { request, context in try await edit(request, context) }
        routes.delete(":workspace") { request, context in try await delete(request, context) }
        routes.get(":workspace/exit") { request, context in try await leave(request, context) }
        routes.put(":workspace/transfer/ownership") { request, context in try await transfer(context, to: try await newOwner(request, context)) }
        routes.post(":workspace/members") { request, context in try await invite(request, context) }
        routes.get(":workspace/members") { request, context -> [MemberResponse] in
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            return try await read { c in
                _ = try await requireMember(id, me, c)
                return try await workspaces.members(of: id, c).map(MemberResponse.init)
            }
        }
        routes.get(":workspace/members/:user") { request, context -> MemberResponse in
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            let other: UserID = try pathID(context, "user")
            return try await read { c in
                _ = try await requireMember(id, me, c)
                guard let member = try await workspaces.member(other, of: id, c) else { throw APIError.notFound("member") }
                return MemberResponse(member)
            }
        }
        routes.get(":workspace/search") { request, context in try await search(request, context) }
        return routes
    }

    /// The workspace with the channels and members whose names contain `keyword`.
    func search(_ request: Request, _ context: AuthenticatedContext) async throws -> WorkspaceDetailResponse {
        let me = context.identity
        let id: WorkspaceID = try pathID(context, "workspace")
        let keyword = request.uri.queryParameters.get("keyword")?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        guard !keyword.isEmpty, TextLimit.searchKeyword.allows(keyword) else {
            throw APIError.badRequest("keyword must be 1 to 100 characters (400 bytes)")
        }
        let pattern = LikePattern.contains(keyword)
        return try await read { c in
            let workspace = try await requireMember(id, me, c)
            return WorkspaceDetailResponse(
                workspace,
                channels: try await channels.search(in: id, pattern: pattern, c),
                members: try await workspaces.searchMembers(of: id, pattern: pattern, c)
            )
        }
    }

    /// Cover images, to members of a workspace that shows them; mounted at `/v1/static/workspaces`.
    var coverRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get(":file") { _, context -> Response in
            let me = context.identity
            let file = context.parameters.get("file") ?? ""
            if file == CoverImages.defaultCoverName { return CoverImages.defaultCoverResponse() }
            let path = CoverImages.urlPrefix + file
            guard try await read({ try await workspaces.canSeeCover(path, user: me, $0) }) else { throw APIError.notFound("image") }
            return try await images.response(named: file, context: context)
        }
        return routes
    }

    /// Creates the workspace with its owner as first member, a default category and the default
    /// channel. With a creation cost the workspace stays pending until `payment` answers the
    /// debit request (see `CreationSaga`).
    func create(_ request: Request, _ context: AuthenticatedContext) async throws -> WorkspaceResponse {
        let me = context.identity
        let form = try await WorkspaceForm.read(request, context: context, images: images)
        let name = try WorkspaceForm.validName(form.name)
        let description = try WorkspaceForm.validDescription(form.description)
        let cover = try form.image.map(images.store)
        let cost = settings.creationCost
        let debitRequest: CoinRequestID? = cost > 0 ? .generate() : nil
        let workspace: WorkspaceRecord
        do {
            workspace = try await write { c in
                guard
                    let workspace = try await workspaces.insert(
                        .generate(), name: name, description: description, coverImage: cover, owner: me, pendingDebit: debitRequest, c
                    )
                else { throw APIError.duplicate("workspace name") }
                guard try await workspaces.addMember(workspace.id, me, c) else { throw PostgresStoreError("new workspace has members") }
                let category = try await categories.insert(.generate(), workspace: workspace.id, name: Self.defaultCategoryName, c)
                guard
                    let channel = try await channels.insert(
                        .generate(), workspace: workspace.id, category: category.id, name: Self.defaultChannelName, description: nil,
                        coverImage: nil, owner: me, isDefault: true, c
                    )
                else { throw PostgresStoreError("default channel insert returned no row") }
                _ = try await channels.addMember(channel.id, me, c)
                if let debitRequest {
                    try await emit(
                        WorkspaceEvents.CoinDebitRequested(
                            requestId: debitRequest, workspaceId: workspace.id, userId: me, amount: cost, reason: "workspace-creation"
                        ), c)
                } else {
                    try await emitCreated(workspace, .workspace, defaultChannel: channel, c)
                }
                return workspace
            }
        } catch {
            images.remove(cover)
            throw error
        }
        guard debitRequest != nil else { return WorkspaceResponse(workspace) }
        switch try await saga.outcome(of: workspace.id, timeout: settings.sagaTimeout) {
        case .active:
            return WorkspaceResponse(workspace)
        case .gone:
            throw APIError.notEnoughCoins
        case .pending:
            // The debit is still unanswered: the workspace appears once payment answers.
            throw APIError.dependencyUnavailable("coin debit for workspace \(workspace.id) unanswered")
        }
    }

    /// The events of a workspace becoming visible: itself, its default channel, its owner.
    func emitCreated(_ workspace: WorkspaceRecord, _ kind: WorkspaceKind, defaultChannel channel: ChannelRecord, _ c: PostgresConnection) async throws {
        try await emit(
            WorkspaceEvents.WorkspaceCreated(
                workspaceId: workspace.id, name: workspace.name, description: workspace.description, coverImage: workspace.coverImage,
                ownerId: workspace.ownerId, defaultChannelId: channel.id, createdAt: workspace.createdAt, alias: workspace.alias,
                defaultChannelAlias: channel.alias
            ), c)
        try await emit(
            WorkspaceEvents.ChannelCreated(
                workspaceId: workspace.id, channelId: channel.id, name: channel.name, description: channel.description,
                ownerId: channel.ownerId, isDefault: true, createdAt: channel.createdAt, alias: channel.alias, joinable: kind.joinsByReading
            ), c)
        try await emit(WorkspaceEvents.MemberJoined(workspaceId: workspace.id, userId: workspace.ownerId, channelIds: [channel.id], via: .creation), c)
    }

    func edit(_ request: Request, _ context: AuthenticatedContext) async throws -> WorkspaceResponse {
        let me = context.identity
        let id: WorkspaceID = try pathID(context, "workspace")
        let form = try await WorkspaceForm.read(request, context: context, images: images)
        let newName = try form.name.map { try WorkspaceForm.validName($0) }
        let newDescription = try form.description.map { try WorkspaceForm.validDescription($0) }
        let newCover = try form.image.map(images.store)
        let result: (WorkspaceRecord, String?)
        do {
            result = try await write { c in
                let current = try await requireOwner(id, me, c, lock: true)
                let name = newName ?? current.name
                let description = newDescription ?? current.description
                guard name != current.name || description != current.description || newCover != nil else { throw APIError.duplicate("no changes") }
                guard let updated = try await workspaces.update(id, name: name, description: description, coverImage: newCover ?? current.coverImage, c) else {
                    throw APIError.notFound("workspace")
                }
                try await emit(
                    WorkspaceEvents.WorkspaceUpdated(
                        workspaceId: id, name: updated.name, description: updated.description, coverImage: updated.coverImage
                    ), c)
                return (updated, newCover == nil ? nil : current.coverImage)
            }
        } catch {
            images.remove(newCover)
            throw error
        }
        images.remove(result.1)
        return WorkspaceResponse(result.0)
    }

    func delete(_ request: Request, _ context: AuthenticatedContext) async throws -> HTTPResponse.Status {
        let me = context.identity
        let id: WorkspaceID = try pathID(context, "workspace")
        let covers = try await write { c -> [String] in
            let workspace = try await requireOwner(id, me, c, lock: true)
            let all = try await channels.all(in: id, c)
            try await workspaces.delete(id, c)
            try await emit(WorkspaceEvents.WorkspaceDeleted(workspaceId: id, channelIds: all.map(\.id)), c)
            return ([workspace.coverImage] + all.map(\.coverImage)).compactMap { $0 }
        }
        covers.forEach(images.remove)
        return .ok
    }

    /// `GET .../exit`: leaves the workspace and all its channels; returns my remaining workspaces.
    /// The owner of the workspace or of any of its channels must transfer ownership first (E15).
    func leave(_ request: Request, _ context: AuthenticatedContext) async throws -> [WorkspaceResponse] {
        let me = context.identity
        let id: WorkspaceID = try pathID(context, "workspace")
        return try await write { c in
            let workspace = try await requireMember(id, me, c, lock: true)
            guard workspace.ownerId != me else { throw APIError.notPossible("the owner cannot leave") }
            guard try await channels.ownedCount(in: id, user: me, c) == 0 else { throw APIError.notPossible("a channel owner cannot leave") }
            let left = try await channels.removeFromAll(in: id, user: me, c)
            try await workspaces.removeMember(id, me, c)
            try await emit(WorkspaceEvents.MemberLeft(workspaceId: id, userId: me, channelIds: left), c)
            return try await workspaces.list(for: me, c).map(WorkspaceResponse.init)
        }
    }

    func transfer(_ context: AuthenticatedContext, to target: UserID) async throws -> WorkspaceResponse {
        let me = context.identity
        let id: WorkspaceID = try pathID(context, "workspace")
        return WorkspaceResponse(
            try await write { c in
                _ = try await requireOwner(id, me, c, lock: true)
                guard target != me else { throw APIError.badRequest("already the owner") }
                guard try await workspaces.isMember(id, target, c) else { throw APIError.notFound("new owner is not a member") }
                guard let updated = try await workspaces.setOwner(id, target, c) else { throw APIError.notFound("workspace") }
                try await emit(WorkspaceEvents.WorkspaceOwnerChanged(workspaceId: id, previousOwnerId: me, ownerId: target), c)
                return updated
            })
    }

    /// Invites a registered user by email: they join the workspace and its default channel.
    func invite(_ request: Request, _ context: AuthenticatedContext) async throws -> MemberResponse {
        let me = context.identity
        let id: WorkspaceID = try pathID(context, "workspace")
        let email = try EmailAddress.validated(try await request.decodeBody(as: EmailBody.self, context: context).email)
        return MemberResponse(
            try await write { c in
                _ = try await requireOwner(id, me, c, lock: true)
                guard let invitee = try await workspaces.user(email: email, c) else { throw APIError.loginFailed("no user with that email") }
                try await join(invitee.userId, workspace: id, via: .invitation, c)
                return invitee
            })
    }

    /// Adds `user` to the locked workspace and its default channel (E12 when already a member).
    func join(_ user: UserID, workspace id: WorkspaceID, via: WorkspaceEvents.MemberJoined.Via, _ c: PostgresConnection) async throws {
        guard try await workspaces.addMember(id, user, c) else { throw APIError.duplicate("already a member") }
        var joined: [ChannelID] = []
        if let channel = try await channels.defaultChannel(in: id, c), try await channels.addMember(channel.id, user, c) {
            joined.append(channel.id)
            joined += try await joinThreads(of: channel.id, user, c)
        }
        try await emit(WorkspaceEvents.MemberJoined(workspaceId: id, userId: user, channelIds: joined, via: via), c)
    }
}
