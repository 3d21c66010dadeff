import Database
import Events
import Foundation
import Logging
import Metrics
import PostgresNIO

/// A device token's provider, by its shape: APNs device tokens are 64 hexadecimal characters
/// (WorkSpaceX sends them raw), everything else is an FCM registration token.
enum PushProvider: String, Sendable, CaseIterable {
    case fcm, apns

    init(token: String) {
        let isHex = token.utf8.count == 64 && token.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) || (65...70).contains($0) }
        self = isHex ? .apns : .fcm
    }
}

/// `chat.message.v1` → the notifications to send, written in the inbox transaction of the
/// message event (so a message is planned exactly once, whatever the redeliveries): one row per
/// (message, device) of each reader other than the sender who is not online, whose setting for
/// the conversation lets it through (`all`; `mentions` when mentioned; never `none`), on a
/// provider that is configured. Every reader's unread counter (the badge) moves, online or not.
struct NotificationPlanner: Sendable {
    static let wakeChannel = "push_notifications"
    let providers: Set<PushProvider>
    let planned = Counter(label: "push_notifications_planned_total")
    let skippedNoProvider = Counter(label: "push_notifications_skipped_total", dimensions: [("reason", "no_provider")])

    init(providers: Set<PushProvider>) {
        self.providers = providers
    }

    func register(into router: inout EventRouter) {
        router.on(ChatEvents.ChannelMessageCreated.self) { event, context in
            let m = event.data
            var readers: [UUID] = []
            for try await reader in try await context.connection.execute(
                ChannelReaders(channel: m.channelId.uuid, sender: m.sender.userId.uuid), logger: context.logger)
            {
                readers.append(reader)
            }
            let workspace = try await Self.workspaceName(m.workspaceId, context)
            try await plan(
                readers: readers, conversation: m.channelId.uuid, messageId: m.messageId.uuid, messageAt: m.createdAt, mentions: m.mentions ?? [],
                context
            ) { badge in .channel(m, workspace: workspace, badge: badge) }
        }
        router.on(ChatEvents.DirectMessageCreated.self) { event, context in
            let m = event.data
            let readers: [UUID]
            var workspace: String?
            if let workspaceId = m.workspaceId {
                // The other participant, while still in the workspace (who left it reads nothing).
                readers = try await Self.uuids(
                    context.connection.query(
                        """
                        SELECT user_id FROM workspace_members WHERE workspace_id = \(workspaceId.uuid)
                          AND user_id = ANY(\(m.participants.map(\.uuid))::uuid[]) AND user_id <> \(m.sender.userId.uuid)
                        """, logger: context.logger))
                workspace = try await Self.workspaceName(workspaceId, context)
            } else {
                // A personal room: its members when the message was sent.
                readers = m.participants.map(\.uuid).filter { $0 != m.sender.userId.uuid }
            }
            try await plan(
                readers: readers, conversation: m.roomId.uuid, messageId: m.messageId.uuid, messageAt: m.createdAt, mentions: m.mentions ?? [],
                context
            ) { badge in .dm(m, workspace: workspace, badge: badge) }
        }
    }

    private func plan(
        readers: [UUID], conversation: UUID, messageId: UUID, messageAt: Date, mentions: [UserID], _ context: EventContext,
        content: (Int) -> NotificationContent
    ) async throws {
        guard !readers.isEmpty else { return }
        let c = context.connection
        _ = try await c.execute(BumpUnreadCounts(readers: readers, conversation: conversation), logger: context.logger)
        let rows = try await c.execute(OfflineDevices(readers: readers, conversation: conversation), logger: context.logger)
        let mentioned = Set(mentions.map(\.uuid))
        var (users, tokens, kinds, payloads) = ([UUID](), [String](), [String](), [String]())
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        for try await (user, token, mode, badge) in rows {
            guard mode == "all" || (mode == "mentions" && mentioned.contains(user)) else { continue }
            let provider = PushProvider(token: token)
            guard providers.contains(provider) else {
                skippedNoProvider.increment()
                continue
            }
            users.append(user)
            tokens.append(token)
            kinds.append(provider.rawValue)
            payloads.append(String(decoding: try encoder.encode(content(Int(badge))), as: UTF8.self))
        }
        guard !tokens.isEmpty else { return }
        _ = try await c.query(
            """
            INSERT INTO notifications (message_id, token, user_id, provider, payload, message_at)
            SELECT \(messageId), t, u, k, p::jsonb, \(messageAt)
            FROM unnest(\(tokens)::text[], \(users)::uuid[], \(kinds)::text[], \(payloads)::text[]) AS x(t, u, k, p)
            ON CONFLICT DO NOTHING
            """, logger: context.logger)
        _ = try await c.query("SELECT pg_notify(\(Self.wakeChannel), '')", logger: context.logger)
        planned.increment(by: tokens.count)
    }

    private static func workspaceName(_ workspace: WorkspaceID, _ context: EventContext) async throws -> String? {
        for try await name in try await context.connection.execute(WorkspaceName(workspace: workspace.uuid), logger: context.logger) { return name }
        return nil
    }

    private static func uuids(_ rows: PostgresRowSequence) async throws -> [UUID] {
        var ids: [UUID] = []
        for try await id in rows.decode(UUID.self) { ids.append(id) }
        return ids
    }
}
