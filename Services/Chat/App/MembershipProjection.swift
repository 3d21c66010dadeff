import Database
import Events
import Foundation
import Logging
import PostgresNIO

/// `workspace.v1` → chat's read model of channels and who is in them. Events of one workspace
/// arrive in order (keyed by workspace id) and carry the state after the change, so each is
/// applied as an idempotent upsert or delete.
enum MembershipProjection {
    static func register(into router: inout EventRouter) {
        router.on(WorkspaceEvents.WorkspaceCreated.self) { event, context in
            guard let alias = event.data.alias else { return }
            _ = try await context.connection.query(
                """
                INSERT INTO workspace_aliases (workspace_id, alias) VALUES (\(event.data.workspaceId.uuid), \(alias)) ON CONFLICT DO NOTHING
                """, logger: context.logger)
        }
        router.on(WorkspaceEvents.ChannelCreated.self) { event, context in
            let e = event.data
            _ = try await context.connection.query(
                """
                INSERT INTO channels (id, workspace_id, name, alias, joinable, parent_id)
                VALUES (\(e.channelId.uuid), \(e.workspaceId.uuid), \(e.name), \(e.alias), \(e.joinable ?? false), \(e.parentId?.uuid))
                ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, alias = coalesce(EXCLUDED.alias, channels.alias), joinable = EXCLUDED.joinable,
                    parent_id = EXCLUDED.parent_id
                """, logger: context.logger)
        }
        router.on(WorkspaceEvents.ChannelUpdated.self) { event, context in
            _ = try await context.connection.query(
                "UPDATE channels SET name = \(event.data.name) WHERE id = \(event.data.channelId.uuid)", logger: context.logger
            )
        }
        router.on(WorkspaceEvents.ChannelDeleted.self) { event, context in
            try await deleteChannels([event.data.channelId], context)
        }
        router.on(WorkspaceEvents.WorkspaceDeleted.self) { event, context in
            try await deleteChannels(event.data.channelIds, context)
            let workspace = event.data.workspaceId.uuid
            _ = try await context.connection.query(
                """
                DELETE FROM messages WHERE conversation_id IN (SELECT id FROM dm_rooms WHERE workspace_id = \(workspace))
                """, logger: context.logger)
            _ = try await context.connection.query(
                """
                DELETE FROM read_cursors WHERE conversation_id IN (SELECT id FROM dm_rooms WHERE workspace_id = \(workspace))
                """, logger: context.logger)
            _ = try await context.connection.query("DELETE FROM dm_rooms WHERE workspace_id = \(workspace)", logger: context.logger)
            _ = try await context.connection.query("DELETE FROM workspace_aliases WHERE workspace_id = \(workspace)", logger: context.logger)
            try await WorkspaceMembersProjection.deleted(event.data, context)
        }
        router.on(WorkspaceEvents.MemberJoined.self) { event, context in
            let e = event.data
            try await WorkspaceMembersProjection.joined(e, context)
            try await addMember(e.userId, to: e.channelIds, context)
        }
        router.on(WorkspaceEvents.MemberLeft.self) { event, context in
            let e = event.data
            try await WorkspaceMembersProjection.left(e, context)
            _ = try await context.connection.query(
                """
                DELETE FROM channel_members m USING channels c
                WHERE m.channel_id = c.id AND c.workspace_id = \(e.workspaceId.uuid) AND m.user_id = \(e.userId.uuid)
                """, logger: context.logger)
        }
        router.on(WorkspaceEvents.ChannelMemberJoined.self) { event, context in
            try await addMember(event.data.userId, to: [event.data.channelId], context)
        }
        // A join by reading that the workspace refused: take back what `MessageStore.joinByReading` granted.
        router.on(WorkspaceEvents.ChannelJoinRefused.self) { event, context in
            _ = try await context.connection.query(
                """
                DELETE FROM channel_members WHERE channel_id = \(event.data.channelId.uuid) AND user_id = \(event.data.userId.uuid)
                """, logger: context.logger)
        }
        router.on(WorkspaceEvents.ChannelMemberLeft.self) { event, context in
            _ = try await context.connection.query(
                """
                DELETE FROM channel_members WHERE channel_id = \(event.data.channelId.uuid) AND user_id = \(event.data.userId.uuid)
                """, logger: context.logger)
        }
    }

    private static func addMember(_ user: UserID, to channels: [ChannelID], _ context: EventContext) async throws {
        guard !channels.isEmpty else { return }
        // Channels this projection does not know (deleted meanwhile) are skipped by the join.
        _ = try await context.connection.query(
            """
            INSERT INTO channel_members (channel_id, user_id)
            SELECT c.id, \(user.uuid) FROM channels c WHERE c.id = ANY(\(channels.map(\.uuid))::uuid[])
            ON CONFLICT DO NOTHING
            """, logger: context.logger)
    }

    private static func deleteChannels(_ channels: [ChannelID], _ context: EventContext) async throws {
        guard !channels.isEmpty else { return }
        let ids = channels.map(\.uuid)
        _ = try await context.connection.query("DELETE FROM messages WHERE conversation_id = ANY(\(ids)::uuid[])", logger: context.logger)
        _ = try await context.connection.query("DELETE FROM read_cursors WHERE conversation_id = ANY(\(ids)::uuid[])", logger: context.logger)
        _ = try await context.connection.query("DELETE FROM channels WHERE id = ANY(\(ids)::uuid[])", logger: context.logger)
    }
}
