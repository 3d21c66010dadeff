import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit

/// Threads: channels under a channel, one level deep. A thread shares its channel's category,
/// visibility and members: it is created with the channel's members, whoever joins or leaves the
/// channel joins or leaves its threads, and deleting the channel deletes them. Everything else —
/// messages, reads, unreads, real-time delivery — is a channel's, under the thread's own id.
///
/// `/v1/workspaces/{id}/channels/{channel}/threads` (GET lists, POST `{name}` creates); Smooth's
/// `POST /channel/thread` and its layout's `threads:[{id, name}]`.
extension WorkspaceAPI {
    /// Creates a thread under `parent` in the locked workspace (of `kind`), owned by `owner`, with
    /// the channel's members; nil when a thread of the channel already has the name.
    func insertThread(
        _ name: String, under parent: ChannelRecord, in kind: WorkspaceKind, owner: UserID, _ c: PostgresConnection
    ) async throws -> ChannelRecord? {
        guard
            let thread = try await channels.insert(
                .generate(), workspace: parent.workspaceId, category: parent.categoryId, name: name, description: nil, coverImage: nil,
                owner: owner, isDefault: false, type: .text, isPublic: parent.isPublic, parent: parent.id, c)
        else { return nil }
        try await emit(
            WorkspaceEvents.ChannelCreated(
                workspaceId: thread.workspaceId, channelId: thread.id, name: thread.name, description: nil, ownerId: owner, isDefault: false,
                createdAt: thread.createdAt, alias: thread.alias, parentId: parent.id, joinable: kind.joinsByReading), c)
        for user in try await channels.copyMembers(from: parent.id, to: thread.id, c) {
            try await emit(WorkspaceEvents.ChannelMemberJoined(workspaceId: thread.workspaceId, channelId: thread.id, userId: user), c)
        }
        return thread
    }

    /// Adds `user` to the threads of `channel` they are not in; returns those threads (the
    /// caller publishes the joins, as part of its own event).
    func joinThreads(of channel: ChannelID, _ user: UserID, _ c: PostgresConnection) async throws -> [ChannelID] {
        var joined: [ChannelID] = []
        for thread in try await channels.threads(of: channel, c) where try await channels.addMember(thread.id, user, c) {
            joined.append(thread.id)
        }
        return joined
    }

    /// Takes `user` out of the threads of `channel` (`workspace.channel-member-left` each).
    func leaveThreads(of channel: ChannelID, _ user: UserID, _ c: PostgresConnection) async throws {
        for thread in try await channels.threads(of: channel, c) where try await channels.isMember(thread.id, user, c) {
            try await channels.removeMember(thread.id, user, c)
            try await emit(WorkspaceEvents.ChannelMemberLeft(workspaceId: thread.workspaceId, channelId: thread.id, userId: user), c)
        }
    }

    /// Deletes a channel of the locked workspace and its threads, threads first
    /// (`workspace.channel-deleted` each); returns the cover images to remove.
    func deleteWithThreads(_ channel: ChannelRecord, _ c: PostgresConnection) async throws -> [String] {
        let doomed = try await channels.threads(of: channel.id, c) + [channel]
        for victim in doomed {
            try await channels.delete(victim.id, c)
            try await emit(WorkspaceEvents.ChannelDeleted(workspaceId: victim.workspaceId, channelId: victim.id), c)
        }
        return doomed.compactMap(\.coverImage)
    }

    /// `GET …/channels/{channel}/threads`: any member of the workspace, as for channels.
    func listThreads(_ request: Request, _ context: AuthenticatedContext) async throws -> [ChannelResponse] {
        try await readChannel(context) { channel, c in try await channels.threads(of: channel.id, c).map(ChannelResponse.init) }
    }

    /// `POST …/channels/{channel}/threads` `{name}`: a member of the channel opens a thread (E11
    /// under a thread, E12 when the channel has a thread of that name, E14 for a non-member).
    func createThread(_ request: Request, _ context: AuthenticatedContext) async throws -> ChannelResponse {
        let me = context.identity
        let id: WorkspaceID = try pathID(context, "workspace")
        let channelId: ChannelID = try pathID(context, "channel")
        let name = try WorkspaceForm.validName(try await request.decodeBody(as: NameBody.self, context: context).name)
        return ChannelResponse(
            try await write { c in
                _ = try await requireMember(id, me, c, lock: true)
                let parent = try await requireChannel(channelId, in: id, c)
                guard !parent.isThread else { throw APIError.badRequest("threads cannot be nested") }
                guard try await channels.isMember(parent.id, me, c) else { throw APIError.forbidden("not a member of the channel") }
                guard let thread = try await insertThread(name, under: parent, in: .workspace, owner: me, c) else { throw APIError.duplicate("thread name") }
                return thread
            })
    }
}

extension Array where Element == ChannelRecord {
    /// The channels a list shows: threads are listed under their channel.
    var withoutThreads: [ChannelRecord] { filter { !$0.isThread } }
}
