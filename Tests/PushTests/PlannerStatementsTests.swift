import Database
import Events
import Foundation
import PostgresNIO
import Testing
import TestSupport

@testable import PushApp

/// The planner's statements on real PostgreSQL: what they answer, which settle on a generic plan
/// (docs/benchmarks.md parts 7 and 9), and a run of channel messages planned together as if one
/// by one.
@Suite("Push planner statements")
struct PlannerStatementsTests {
    @Test(
        "bump then offline devices: online readers and the sender left out, badges count the message, the workspace's name; the room's bump on a generic plan"
    )
    func answersAndGenericPlans() async throws {
        let database = try await TestDatabase.create(prefix: "plan")
        defer { Task { try? await database.drop() } }
        try await database.withClient { client in
            try await Migrator(PushService.migrations).migrate(client: client, logger: TestDatabase.logger)
            let (workspace, channel, room) = (UUID(), UUID(), UUID())
            let (sender, offline, online, silent) = (UUID(), UUID(), UUID(), UUID())
            try await client.withConnection { c in
                let logger = TestDatabase.logger
                _ = try await c.query("INSERT INTO workspaces (id, name) VALUES (\(workspace), '우리 팀')", logger: logger)
                for user in [sender, offline, online, silent] {
                    _ = try await c.query("INSERT INTO channel_members (channel_id, user_id) VALUES (\(channel), \(user))", logger: logger)
                }
                _ = try await c.query(
                    """
                    INSERT INTO device_tokens (token, user_id, added_at) VALUES ('t-offline', \(offline), now()), ('t-online', \(online), now()),
                      ('t-sender', \(sender), now())
                    """, logger: logger)
                _ = try await c.query("INSERT INTO presence (user_id, online, last_seen) VALUES (\(online), true, now())", logger: logger)
                // Another conversation's unread message counts in the badge too.
                _ = try await c.query("INSERT INTO unread_counts (user_id, conversation_id, count) VALUES (\(offline), \(room), 2)", logger: logger)

                // Eight channel messages: more than the five custom plans PostgreSQL tries first.
                var last: [PlannedDevice] = []
                for _ in 0..<8 {
                    _ = try await c.execute(BumpChannelUnreads(channels: [channel], senders: [sender]), logger: logger)
                    last = []
                    let statement = ChannelOfflineDevices(channels: [channel], senders: [sender], workspaces: [workspace])
                    for try await (index, device) in try await c.execute(statement, logger: logger) {
                        #expect(index == 1)
                        last.append(device)
                    }
                }
                #expect(last.map(\.token) == ["t-offline"])
                #expect(last.first?.badge == 10 && last.first?.mode == "all" && last.first?.workspace == "우리 팀")

                // Eight room messages in a personal room (no workspace), a reader named twice.
                for _ in 0..<8 {
                    _ = try await c.execute(BumpRoomUnreads(room: room, readers: [offline, offline, online]), logger: logger)
                    last = []
                    for try await device in try await c.execute(
                        RoomOfflineDevices(room: room, readers: [offline, offline, online], workspace: nil), logger: logger)
                    {
                        last.append(device)
                    }
                }
                #expect(last.map(\.token) == ["t-offline"])
                #expect(last.first?.badge == 18 && last.first.map { $0.workspace == nil } == true)

                var plans: [String: Int64] = [:]
                for try await (statement, generic) in try await c.query(
                    "SELECT statement, generic_plans FROM pg_prepared_statements", logger: logger
                ).decode((String, Int64).self) {
                    plans[statement] = generic
                }
                // Only `BumpRoomUnreads`: the channel statements take a poll's run in arrays, and
                // `RoomOfflineDevices` a DM's few readers in one; with the arrays' lengths known, a
                // custom plan stays cheaper, so PostgreSQL plans them at each execution (once per
                // poll for the channel ones; forcing generic plans measured the same, part 9 of
                // docs/benchmarks.md).
                for sql in [BumpRoomUnreads.sql] {
                    let generic = try #require(plans[sql], "not prepared: \(sql.prefix(60))")
                    #expect(generic > 0, "planned again on every execution: \(sql.prefix(60))")
                }
            }
        }
    }

    @Test(
        "a run of channel messages (two channels, a reader in both, one message by that reader) planned together: counters move by the run, each notification's badge as if planned one by one"
    )
    func runPlannedTogether() async throws {
        let database = try await TestDatabase.create(prefix: "plan")
        defer { Task { try? await database.drop() } }
        try await database.withClient { client in
            try await Migrator(PushService.migrations).migrate(client: client, logger: TestDatabase.logger)
            let (workspace, first, second) = (UUID(), UUID(), UUID())
            let (author, both, onlyFirst) = (UUID(), UUID(), UUID())
            try await client.withConnection { c in
                let logger = TestDatabase.logger
                _ = try await c.query("INSERT INTO workspaces (id, name) VALUES (\(workspace), '팀')", logger: logger)
                for (channel, user) in [(first, author), (first, both), (first, onlyFirst), (second, author), (second, both)] {
                    _ = try await c.query("INSERT INTO channel_members (channel_id, user_id) VALUES (\(channel), \(user))", logger: logger)
                }
                _ = try await c.query(
                    "INSERT INTO device_tokens (token, user_id, added_at) VALUES ('t-both', \(both), now()), ('t-first', \(onlyFirst), now())",
                    logger: logger)
                _ = try await c.query("INSERT INTO unread_counts (user_id, conversation_id, count) VALUES (\(both), \(UUID()), 5)", logger: logger)

                func message(_ channel: UUID, by sender: UUID) -> ChatEvents.ChannelMessageCreated {
                    ChatEvents.ChannelMessageCreated(
                        messageId: MessageID(UUID()), workspaceId: WorkspaceID(workspace), channelId: ChannelID(channel), channelName: "c",
                        sender: .init(userId: UserID(sender), email: "a@b.c", nickname: "n", profileImage: nil), content: "hi", files: [], createdAt: Date())
                }
                // 1: first by author; 2: second by author; 3: first by `both` (not their own reader); 4: first by author.
                let run = [message(first, by: author), message(second, by: author), message(first, by: both), message(first, by: author)]
                try await NotificationPlanner(providers: [.fcm]).planChannelMessages(run, on: c, logger: logger)

                var counts: [String: Int64] = [:]
                for try await (user, conversation, count) in try await c.query(
                    "SELECT user_id, conversation_id, count FROM unread_counts WHERE conversation_id IN (\(first), \(second))", logger: logger
                ).decode((UUID, UUID, Int64).self) {
                    counts["\(user == both ? "both" : user == onlyFirst ? "onlyFirst" : "author") \(conversation == first ? 1 : 2)"] = count
                }
                #expect(counts == ["both 1": 2, "both 2": 1, "onlyFirst 1": 3, "author 1": 1])

                var badges: [String: Int] = [:]
                for try await (token, message, badge) in try await c.query(
                    "SELECT token, message_id, (payload->>'badge')::int FROM notifications", logger: logger
                ).decode((String, UUID, Int).self) {
                    let index = try #require(run.firstIndex { $0.messageId.uuid == message })
                    badges["\(token) \(index + 1)"] = badge
                }
                // `both` had 5 elsewhere: 6 after message 1, 7 after 2, none for 3 (their own), 8 after 4.
                #expect(badges == ["t-both 1": 6, "t-both 2": 7, "t-both 4": 8, "t-first 1": 1, "t-first 3": 2, "t-first 4": 3])
            }
        }
    }
}
