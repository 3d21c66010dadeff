import Database
import Events
import Foundation
import HTTPTypes
import Hummingbird
import PostgresNIO
import ServiceKit
import Uploads

/// `/v1/workspaces/{id}/channels...` and `/my-channels` (client contract §1.4). Every channel is
/// visible to every member of its workspace; the channel's owner or the workspace's owner may
/// edit, delete or hand it over.
extension WorkspaceAPI {
    /// Mounted at `/v1/workspaces/{id}`.
    var channelRoutes: RouteCollection<AuthenticatedContext> {
        let routes = RouteCollection(context: AuthenticatedContext.self)
        routes.get("channels") { request, context -> [ChannelResponse] in
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            return try await read { c in
                _ = try await requireMember(id, me, c)
                return try await channels.all(in: id, c).withoutThreads.map(ChannelResponse.init)
            }
        }
        routes.get("my-channels") { request, context -> [ChannelResponse] in
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            return try await read { c in
                _ = try await requireMember(id, me, c)
                return try await channels.mine(in: id, user: me, c).withoutThreads.map(ChannelResponse.init)
            }
        }
        routes.post("channels") { request, context in try await createChannel(request, context) }
        routes.get("channels/:channel") { request, context -> ChannelDetailResponse in
            try await readChannel(context) { channel, c in ChannelDetailResponse(channel, members: try await channels.members(of: channel.id, c)) }
        }
        routes.put("channels/:channel") { request, context in
            try await editChannel(try await WorkspaceForm.read(request, context: context, images: images), context)
        }
        routes.delete("channels/:channel") { request, context in try await deleteChannel(request, context) }
        routes.get("channels/:channel/exit") { request, context in try await leaveChannel(request, context) }
        routes.put("channels/:channel/transfer/ownership") { request, context in
            try await transferChannel(context, to: try await newOwner(request, context))
        }
        routes.get("channels/:channel/members") { request, context -> [MemberResponse] in
            try await readChannel(context) { channel, c in try await channels.members(of: channel.id, c).map(MemberResponse.init) }
        }
        routes.post("channels/:channel/join") { request, context in try await joinChannel(request, context) }
        routes.get("channels/:channel/threads") { request, context in try await listThreads(request, context) }
        routes.post("channels/:channel/threads") { request, context in try await createThread(request, context) }
        return routes
    }

    /// A read of the path's channel by a member of its workspace (E13 for others and for an
    /// unknown channel; every channel, thread or not, is visible to every member).
    func readChannel<T: Sendable>(
        _ context: AuthenticatedContext, _ body: @escaping @Sendable (ChannelRecord, PostgresConnection) async throws -> T
    ) async throws -> T {
        let me = context.identity
        let id: WorkspaceID = try pathID(context, "workspace")
        let channelId: ChannelID = try pathID(context, "channel")
        return try await read { c in
            _ = try await requireMember(id, me, c)
            return try await body(try await requireChannel(channelId, in: id, c), c)
        }
    }

    func requireChannel(_ id: ChannelID, in workspace: WorkspaceID, _ c: PostgresConnection) async throws -> ChannelRecord {
        guard let channel = try await channels.find(id, in: workspace, c) else { throw APIError.notFound("channel") }
        return channel
    }

    /// E14 unless `user` owns the channel or its workspace.
    private func requireChannelManager(_ channel: ChannelRecord, _ workspace: WorkspaceRecord, _ user: UserID) throws {
        guard channel.ownerId == user || workspace.ownerId == user else { throw APIError.forbidden("not the channel owner") }
    }

    func createChannel(_ request: Request, _ context: AuthenticatedContext) async throws -> ChannelResponse {
        let me = context.identity
        let id: WorkspaceID = try pathID(context, "workspace")
        let form = try await WorkspaceForm.read(request, context: context, images: images)
        let name = try WorkspaceForm.validName(form.name)
        let description = try WorkspaceForm.validDescription(form.description)
        let requestedCategory = try form.categoryId.flatMap { $0.isEmpty ? nil : $0 }.map { text -> CategoryID in
            guard let id = CategoryID(text) else { throw APIError.badRequest("category_id is not an id") }
            return id
        }
        let cover = try form.image.map(images.store)
        do {
            return ChannelResponse(
                try await write { c in
                    _ = try await requireMember(id, me, c, lock: true)
                    let category: CategoryID
                    if let requestedCategory {
                        guard try await categories.find(requestedCategory, in: id, c) != nil else { throw APIError.notFound("category") }
                        category = requestedCategory
                    } else {
                        guard let first = try await categories.all(in: id, c).first else { throw PostgresStoreError("workspace without categories") }
                        category = first.id
                    }
                    guard
                        let channel = try await channels.insert(
                            .generate(), workspace: id, category: category, name: name, description: description, coverImage: cover,
                            owner: me, isDefault: false, c
                        )
                    else { throw APIError.duplicate("channel name") }
                    _ = try await channels.addMember(channel.id, me, c)
                    try await emit(
                        WorkspaceEvents.ChannelCreated(
                            workspaceId: id, channelId: channel.id, name: channel.name, description: channel.description, ownerId: me,
                            isDefault: false, createdAt: channel.createdAt, alias: channel.alias, joinable: true
                        ), c)
                    try await emit(WorkspaceEvents.ChannelMemberJoined(workspaceId: id, channelId: channel.id, userId: me), c)
                    return channel
                })
        } catch {
            images.remove(cover)
            throw error
        }
    }

    func editChannel(_ form: WorkspaceForm, _ context: AuthenticatedContext) async throws -> ChannelResponse {
        let me = context.identity
        let id: WorkspaceID = try pathID(context, "workspace")
        let channelId: ChannelID = try pathID(context, "channel")
        let newName = try form.name.map { try WorkspaceForm.validName($0) }
        let newDescription = try form.description.map { try WorkspaceForm.validDescription($0) }
        let newCover = try form.image.map(images.store)
        let result: (ChannelRecord, String?)
        do {
            result = try await write { c in
                let workspace = try await requireMember(id, me, c, lock: true)
                let current = try await requireChannel(channelId, in: id, c)
                try requireChannelManager(current, workspace, me)
                let name = newName ?? current.name
                let description = newDescription ?? current.description
                guard name != current.name || description != current.description || newCover != nil else { throw APIError.duplicate("no changes") }
                guard let updated = try await channels.update(channelId, name: name, description: description, coverImage: newCover ?? current.coverImage, c)
                else {
                    throw APIError.notFound("channel")
                }
                try await emit(
                    WorkspaceEvents.ChannelUpdated(
                        workspaceId: id, channelId: channelId, name: updated.name, description: updated.description, coverImage: updated.coverImage
                    ), c)
                return (updated, newCover == nil ? nil : current.coverImage)
            }
        } catch {
            images.remove(newCover)
            throw error
        }
        images.remove(result.1)
        return ChannelResponse(result.0)
    }

    /// The default channel cannot be deleted (E11).
    func deleteChannel(_ request: Request, _ context: AuthenticatedContext) async throws -> HTTPResponse.Status {
        let me = context.identity
        let id: WorkspaceID = try pathID(context, "workspace")
        let channelId: ChannelID = try pathID(context, "channel")
        let covers = try await write { c -> [String] in
            let workspace = try await requireMember(id, me, c, lock: true)
            let channel = try await requireChannel(channelId, in: id, c)
            try requireChannelManager(channel, workspace, me)
            guard !channel.isDefault else { throw APIError.badRequest("the default channel cannot be deleted") }
            return try await deleteWithThreads(channel, c)
        }
        covers.forEach(images.remove)
        return .ok
    }

    /// `GET .../exit`: leaves the channel; returns my remaining channels of the workspace.
    func leaveChannel(_ request: Request, _ context: AuthenticatedContext) async throws -> [ChannelResponse] {
        let me = context.identity
        let id: WorkspaceID = try pathID(context, "workspace")
        let channelId: ChannelID = try pathID(context, "channel")
        return try await write { c in
            _ = try await requireMember(id, me, c, lock: true)
            let channel = try await requireChannel(channelId, in: id, c)
            guard !channel.isDefault else { throw APIError.badRequest("the default channel cannot be left") }
            guard channel.ownerId != me else { throw APIError.notPossible("the channel owner must transfer ownership first") }
            guard try await channels.isMember(channelId, me, c) else { throw APIError.notFound("not a channel member") }
            try await channels.removeMember(channelId, me, c)
            try await emit(WorkspaceEvents.ChannelMemberLeft(workspaceId: id, channelId: channelId, userId: me), c)
            try await leaveThreads(of: channelId, me, c)
            return try await channels.mine(in: id, user: me, c).withoutThreads.map(ChannelResponse.init)
        }
    }

    func transferChannel(_ context: AuthenticatedContext, to target: UserID) async throws -> ChannelResponse {
        let me = context.identity
        let id: WorkspaceID = try pathID(context, "workspace")
        let channelId: ChannelID = try pathID(context, "channel")
        return ChannelResponse(
            try await write { c in
                let workspace = try await requireMember(id, me, c, lock: true)
                let channel = try await requireChannel(channelId, in: id, c)
                try requireChannelManager(channel, workspace, me)
                guard target != channel.ownerId else { throw APIError.badRequest("already the owner") }
                guard try await channels.isMember(channelId, target, c) else { throw APIError.notFound("new owner is not a channel member") }
                guard let updated = try await channels.setOwner(channelId, target, c) else { throw APIError.notFound("channel") }
                try await emit(
                    WorkspaceEvents.ChannelOwnerChanged(
                        workspaceId: id, channelId: channelId, previousOwnerId: channel.ownerId, ownerId: target
                    ), c)
                return updated
            })
    }

    /// Explore + join: any workspace member may join any of its channels (E12 when already in).
    private func joinChannel(_ request: Request, _ context: AuthenticatedContext) async throws -> ChannelDetailResponse {
        let me = context.identity
        let id: WorkspaceID = try pathID(context, "workspace")
        let channelId: ChannelID = try pathID(context, "channel")
        return try await write { c in
            _ = try await requireMember(id, me, c, lock: true)
            let channel = try await requireChannel(channelId, in: id, c)
            guard try await addToChannel(channel, me, c) else { throw APIError.duplicate("already a channel member") }
            return ChannelDetailResponse(channel, members: try await channels.members(of: channelId, c))
        }
    }
}
