import Database
import Events
import PostgresNIO
import ServiceKit

/// Joining a channel, by `POST …/join` or by reading it: clients that explore channels (WorkSpaceX
/// and the other Gen B clients) have no join call; they open the channel and read its chats. Chat
/// lets a member of the workspace in on its read model and sends `chat.channel-join-requested`;
/// this applies it with the same effect as the join call.
extension WorkspaceAPI {
    /// Adds `user` to `channel` and its threads (`workspace.channel-member-joined` each); false
    /// when they were in the channel already (nothing changes).
    func addToChannel(_ channel: ChannelRecord, _ user: UserID, _ c: PostgresConnection) async throws -> Bool {
        guard try await channels.addMember(channel.id, user, c) else { return false }
        try await emit(WorkspaceEvents.ChannelMemberJoined(workspaceId: channel.workspaceId, channelId: channel.id, userId: user), c)
        for thread in try await joinThreads(of: channel.id, user, c) {
            try await emit(WorkspaceEvents.ChannelMemberJoined(workspaceId: channel.workspaceId, channelId: thread, userId: user), c)
        }
        return true
    }

    /// `chat.read.v1` → join requests: applied once each (through the inbox) and idempotent (a
    /// user already in the channel changes nothing). A user who left the workspace meanwhile, or a
    /// channel deleted meanwhile, gets a `workspace.channel-join-refused`, which takes the
    /// membership chat granted back.
    static func registerJoinRequests(_ api: WorkspaceAPI, into router: inout EventRouter) {
        router.on(ChatEvents.ChannelJoinRequested.self) { event, context in
            let request = event.data
            let c = context.connection
            // Locking the workspace orders this with leaving it and deleting its channels.
            guard try await api.workspaces.find(request.workspaceId, member: request.userId, lock: true, c) != nil,
                let channel = try await api.channels.find(request.channelId, in: request.workspaceId, c)
            else {
                context.logger.info(
                    "refusing a join by reading", metadata: ["workspace.id": "\(request.workspaceId)", "channel.id": "\(request.channelId)"])
                try await api.emit(
                    WorkspaceEvents.ChannelJoinRefused(workspaceId: request.workspaceId, channelId: request.channelId, userId: request.userId), c)
                return
            }
            _ = try await api.addToChannel(channel, request.userId, c)
        }
    }
}
