import ClientContract
import Events
import Foundation
import Hummingbird
import PostgresNIO
import ServiceKit

/// Gen A's channel routes, by channel name (Lilac): `/gena/v1/workspaces/{id}/channels…`. The
/// name is percent-decoded from the path; `my` is the caller's channels, so a channel named "my"
/// is out of Gen A's reach (as it was on Gen A's server).
extension WorkspaceAPI {
    func addGenerationAChannelRoutes(to routes: RouteCollection<AuthenticatedContext>) {
        routes.get(":workspace/channels") { _, context in
            let context = try await generationB(context)
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            return try await read { c -> [GenerationAChannel] in
                _ = try await requireMember(id, me, c)
                return try await shown(try await channels.all(in: id, c).withoutThreads.map(ChannelResponse.init), in: id, c)
            }
        }
        routes.get(":workspace/channels/my") { _, context in
            let context = try await generationB(context)
            let me = context.identity
            let id: WorkspaceID = try pathID(context, "workspace")
            return try await read { c -> [GenerationAChannel] in
                _ = try await requireMember(id, me, c)
                return try await shown(try await channels.mine(in: id, user: me, c).withoutThreads.map(ChannelResponse.init), in: id, c)
            }
        }
        routes.post(":workspace/channels") { request, context in
            let context = try await generationB(context)
            let channel = try await createChannel(request, context)
            return try await shown(channel, in: try pathID(context, "workspace"))
        }
        routes.get(":workspace/channels/:channel") { _, context in
            let context = try await generationB(context)
            let workspace: WorkspaceID = try pathID(context, "workspace")
            return try await readChannel(context) { channel, c -> GenerationAChannel in
                let detail = ChannelDetailResponse(channel, members: try await channels.members(of: channel.id, c))
                let book = try await GenerationAAliases(logger: logger).book(
                    workspaces: [workspace], channels: [channel.id], users: [channel.ownerId] + detail.channelMembers.map(\.user_id), c)
                return GenerationAChannel(detail, workspace: workspace, book)
            }
        }
        routes.put(":workspace/channels/:channel") { request, context in
            let context = try await generationB(context)
            var form = try await WorkspaceForm.read(request, context: context, images: images)
            // Lilac sends an empty string for what it leaves unchanged.
            if form.name?.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty == true { form.name = nil }
            if form.description?.isEmpty == true { form.description = nil }
            return try await shown(try await editChannel(form, context), in: try pathID(context, "workspace"))
        }
        routes.delete(":workspace/channels/:channel") { request, context in try await deleteChannel(request, try await generationB(context)) }
        routes.get(":workspace/channels/:channel/members") { _, context in
            let context = try await generationB(context)
            return try await readChannel(context) { channel, c -> [GenerationAMember] in
                try await shown(try await channels.members(of: channel.id, c).map(MemberResponse.init), c)
            }
        }
        routes.get(":workspace/channels/:channel/leave") { request, context in
            let context = try await generationB(context)
            let remaining = try await leaveChannel(request, context)
            let workspace: WorkspaceID = try pathID(context, "workspace")
            return try await read { c in try await shown(remaining, in: workspace, c) }
        }
        routes.put(":workspace/channels/:channel/change/admin/:user") { _, context in
            let context = try await generationB(context)
            return try await shown(try await transferChannel(context, to: try pathID(context, "user")), in: try pathID(context, "workspace"))
        }
    }

    func shown(_ all: [ChannelResponse], in workspace: WorkspaceID, _ c: PostgresConnection) async throws -> [GenerationAChannel] {
        let book = try await GenerationAAliases(logger: logger).book(
            workspaces: [workspace], channels: all.map(\.channel_id), users: all.map(\.owner_id), c)
        return all.map { GenerationAChannel($0, workspace: workspace, book) }
    }

    func shown(_ channel: ChannelResponse, in workspace: WorkspaceID) async throws -> GenerationAChannel {
        try await read { c in try await shown([channel], in: workspace, c)[0] }
    }
}
