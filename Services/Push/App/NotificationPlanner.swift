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
        // A poll's consecutive channel messages are planned together: two statements for the run.
        router.onBatch(ChatEvents.ChannelMessageCreated.self) { run in
            guard let context = run.first?.context else { return }
            try await planChannelMessages(run.map(\.event.data), on: context.connection, logger: context.logger)
        }
        router.on(ChatEvents.DirectMessageCreated.self) { event, context in
            let m = event.data
            let readers: [UUID]
            if let workspaceId = m.workspaceId {
                // The other participant, while still in the workspace (who left it reads nothing).
                readers = try await Self.uuids(
                    context.connection.query(
                        """
                        SELECT user_id FROM workspace_members WHERE workspace_id = \(workspaceId.uuid)
                          AND user_id = ANY(\(m.participants.map(\.uuid))::uuid[]) AND user_id <> \(m.sender.userId.uuid)
                        """, logger: context.logger))
            } else {
                // A personal room: its members when the message was sent.
                readers = m.participants.map(\.uuid).filter { $0 != m.sender.userId.uuid }
            }
            guard !readers.isEmpty else { return }
            _ = try await context.connection.execute(BumpRoomUnreads(room: m.roomId.uuid, readers: readers), logger: context.logger)
            let devices = try await Self.devices(RoomOfflineDevices(room: m.roomId.uuid, readers: readers, workspace: m.workspaceId?.uuid), context)
            try await plan(
                devices, messageId: m.messageId.uuid, messageAt: m.createdAt, mentions: m.mentions ?? [], on: context.connection, logger: context.logger
            ) { badge, workspace in .dm(m, workspace: workspace, badge: badge) }
        }
    }

    /// Plans a run of channel messages (in topic order) in the inbox transaction on `connection`:
    /// every reader's unread counter moves by the run's messages to them, then each message's
    /// offline devices are notified with the badge they would have had had the messages been
    /// planned one by one.
    func planChannelMessages(_ messages: [ChatEvents.ChannelMessageCreated], on connection: PostgresConnection, logger: Logger) async throws {
        guard !messages.isEmpty else { return }
        let (channels, senders) = (messages.map(\.channelId.uuid), messages.map(\.sender.userId.uuid))
        _ = try await connection.execute(BumpChannelUnreads(channels: channels, senders: senders), logger: logger)
        var devices = Array(repeating: [PlannedDevice](), count: messages.count)
        let statement = ChannelOfflineDevices(channels: channels, senders: senders, workspaces: messages.map(\.workspaceId.uuid))
        for try await (index, device) in try await connection.execute(statement, logger: logger) {
            guard let i = Int(exactly: index - 1), devices.indices.contains(i) else { continue }
            devices[i].append(device)
        }
        // The badges were read after the whole run's bumps. A reader has rows for exactly the
        // messages that bumped them (their tokens and presence are the same for the whole run),
        // so message i's badge leaves out the later messages with rows for that reader.
        var later: [UUID: Int64] = [:]
        for i in messages.indices.reversed() {
            let readers = Set(devices[i].map(\.user))
            devices[i] = devices[i].map { ($0.user, $0.token, $0.mode, $0.badge - later[$0.user, default: 0], $0.workspace) }
            for reader in readers { later[reader, default: 0] += 1 }
        }
        for (m, planned) in zip(messages, devices) {
            try await plan(planned, messageId: m.messageId.uuid, messageAt: m.createdAt, mentions: m.mentions ?? [], on: connection, logger: logger) {
                badge, workspace in .channel(m, workspace: workspace, badge: badge)
            }
        }
    }

    /// The offline readers' devices to notify of a direct message.
    private static func devices(_ statement: RoomOfflineDevices, _ context: EventContext) async throws -> [PlannedDevice] {
        var devices: [PlannedDevice] = []
        for try await device in try await context.connection.execute(statement, logger: context.logger) { devices.append(device) }
        return devices
    }

    private func plan(
        _ devices: [PlannedDevice], messageId: UUID, messageAt: Date, mentions: [UserID], on connection: PostgresConnection, logger: Logger,
        content: (Int, String?) -> NotificationContent
    ) async throws {
        guard !devices.isEmpty else { return }
        let mentioned = Set(mentions.map(\.uuid))
        var (users, tokens, kinds, payloads) = ([UUID](), [String](), [String](), [String]())
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        for device in devices {
            guard device.mode == "all" || (device.mode == "mentions" && mentioned.contains(device.user)) else { continue }
            let provider = PushProvider(token: device.token)
            guard providers.contains(provider) else {
                skippedNoProvider.increment()
                continue
            }
            users.append(device.user)
            tokens.append(device.token)
            kinds.append(provider.rawValue)
            payloads.append(String(decoding: try encoder.encode(content(Int(device.badge), device.workspace)), as: UTF8.self))
        }
        guard !tokens.isEmpty else { return }
        // The delivery workers are woken when the transaction commits.
        _ = try await connection.query(
            """
            WITH planned AS (
                INSERT INTO notifications (message_id, token, user_id, provider, payload, message_at)
                SELECT \(messageId), t, u, k, p::jsonb, \(messageAt)
                FROM unnest(\(tokens)::text[], \(users)::uuid[], \(kinds)::text[], \(payloads)::text[]) AS x(t, u, k, p)
                ON CONFLICT DO NOTHING
            )
            SELECT pg_notify(\(Self.wakeChannel), '')
            """, logger: logger)
        planned.increment(by: tokens.count)
    }

    private static func uuids(_ rows: PostgresRowSequence) async throws -> [UUID] {
        var ids: [UUID] = []
        for try await id in rows.decode(UUID.self) { ids.append(id) }
        return ids
    }
}
