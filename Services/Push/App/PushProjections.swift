import Database
import Events
import Foundation
import PostgresNIO

/// Push's read models, each an idempotent upsert or delete per event.
enum PushProjections {
    /// `auth.user.v1` → who owns which device token. A token belongs to one user at a time; the
    /// events of two users sit in different partitions, so the latest `addedAt` wins.
    static func registerDeviceTokens(into router: inout EventRouter) {
        router.on(AuthEvents.DeviceTokenAdded.self) { event, context in
            let e = event.data
            _ = try await context.connection.query(
                """
                INSERT INTO device_tokens (token, user_id, added_at) VALUES (\(e.token), \(e.userId.uuid), \(e.addedAt))
                ON CONFLICT (token) DO UPDATE SET user_id = EXCLUDED.user_id, added_at = EXCLUDED.added_at
                WHERE device_tokens.added_at <= EXCLUDED.added_at
                """, logger: context.logger)
        }
        router.on(AuthEvents.DeviceTokensRemoved.self) { event, context in
            let e = event.data
            _ = try await context.connection.query(
                """
                DELETE FROM device_tokens WHERE user_id = \(e.userId.uuid) AND token = ANY(\(e.tokens)::text[]) AND added_at <= \(e.removedAt)
                """, logger: context.logger)
        }
        router.on(AuthEvents.UserDeleted.self) { event, context in
            _ = try await context.connection.query("DELETE FROM device_tokens WHERE user_id = \(event.data.userId.uuid)", logger: context.logger)
        }
    }

    /// `workspace.v1` → workspace names (titles), workspace members (DMs) and channel members
    /// (a channel message's readers).
    static func registerMembership(into router: inout EventRouter) {
        router.on(WorkspaceEvents.WorkspaceCreated.self) { event, context in
            try await name(event.data.workspaceId, event.data.name, context)
        }
        router.on(WorkspaceEvents.WorkspaceUpdated.self) { event, context in
            try await name(event.data.workspaceId, event.data.name, context)
        }
        router.on(WorkspaceEvents.WorkspaceDeleted.self) { event, context in
            let e = event.data
            _ = try await context.connection.query("DELETE FROM workspaces WHERE id = \(e.workspaceId.uuid)", logger: context.logger)
            try await WorkspaceMembersProjection.deleted(e, context)
            try await removeChannels(e.channelIds, context)
        }
        router.on(WorkspaceEvents.MemberJoined.self) { event, context in
            let e = event.data
            try await WorkspaceMembersProjection.joined(e, context)
            try await join(e.userId, e.channelIds, context)
        }
        router.on(WorkspaceEvents.MemberLeft.self) { event, context in
            let e = event.data
            try await WorkspaceMembersProjection.left(e, context)
            try await leave(e.userId, e.channelIds, context)
        }
        router.on(WorkspaceEvents.ChannelMemberJoined.self) { event, context in
            try await join(event.data.userId, [event.data.channelId], context)
        }
        router.on(WorkspaceEvents.ChannelMemberLeft.self) { event, context in
            try await leave(event.data.userId, [event.data.channelId], context)
        }
        router.on(WorkspaceEvents.ChannelDeleted.self) { event, context in
            try await removeChannels([event.data.channelId], context)
        }
    }

    /// `presence.v1` → whether each user is online (a user online gets no notification).
    static func registerPresence(into router: inout EventRouter) {
        router.on(PresenceEvents.StatusChanged.self) { event, context in
            let e = event.data
            _ = try await context.connection.query(
                """
                INSERT INTO presence (user_id, online, last_seen) VALUES (\(e.userId.uuid), \(e.status == .online), \(e.lastSeen))
                ON CONFLICT (user_id) DO UPDATE SET online = EXCLUDED.online, last_seen = EXCLUDED.last_seen
                """, logger: context.logger)
        }
    }

    /// `chat.read.v1` → a conversation the user read counts nothing towards the badge any more.
    static func registerReadCursors(into router: inout EventRouter) {
        router.on(ChatEvents.ReadCursorMoved.self) { event, context in
            _ = try await context.connection.query(
                """
                DELETE FROM unread_counts WHERE user_id = \(event.data.userId.uuid) AND conversation_id = \(event.data.conversation.id)
                """, logger: context.logger)
        }
    }

    private static func name(_ workspace: WorkspaceID, _ name: String, _ context: EventContext) async throws {
        _ = try await context.connection.query(
            "INSERT INTO workspaces (id, name) VALUES (\(workspace.uuid), \(name)) ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name",
            logger: context.logger)
    }

    private static func join(_ user: UserID, _ channels: [ChannelID], _ context: EventContext) async throws {
        guard !channels.isEmpty else { return }
        _ = try await context.connection.query(
            """
            INSERT INTO channel_members (channel_id, user_id) SELECT unnest(\(channels.map(\.uuid))::uuid[]), \(user.uuid) ON CONFLICT DO NOTHING
            """, logger: context.logger)
    }

    private static func leave(_ user: UserID, _ channels: [ChannelID], _ context: EventContext) async throws {
        guard !channels.isEmpty else { return }
        _ = try await context.connection.query(
            "DELETE FROM channel_members WHERE user_id = \(user.uuid) AND channel_id = ANY(\(channels.map(\.uuid))::uuid[])", logger: context.logger)
    }

    private static func removeChannels(_ channels: [ChannelID], _ context: EventContext) async throws {
        guard !channels.isEmpty else { return }
        _ = try await context.connection.query(
            "DELETE FROM channel_members WHERE channel_id = ANY(\(channels.map(\.uuid))::uuid[])", logger: context.logger)
        _ = try await context.connection.query(
            "DELETE FROM notification_settings WHERE conversation_id = ANY(\(channels.map(\.uuid))::uuid[])", logger: context.logger)
    }
}
