import Database
import Foundation
import PostgresNIO
import Testing
import TestSupport

@testable import PushApp

/// The planner's statements on real PostgreSQL: what they answer, and that PostgreSQL settles on
/// a generic plan for the channel ones (a single statement doing both was planned again on every
/// message, which cost more than the round trip it saved; docs/benchmarks.md part 7).
@Suite("Push planner statements")
struct PlannerStatementsTests {
    @Test(
        "bump then offline devices: online readers and the sender left out, badges count the message, the workspace's name; the channel statements on a generic plan"
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
                    _ = try await c.execute(BumpChannelUnreads(channel: channel, sender: sender), logger: logger)
                    last = []
                    for try await device in try await c.execute(ChannelOfflineDevices(channel: channel, sender: sender, workspace: workspace), logger: logger) {
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
                // Not `RoomOfflineDevices`: with the room's few readers in a constant array, a custom
                // plan knows their number and stays cheaper, so PostgreSQL plans it for every direct
                // message (0 generic plans here; part 7 of docs/benchmarks.md).
                for sql in [BumpChannelUnreads.sql, ChannelOfflineDevices.sql, BumpRoomUnreads.sql] {
                    let generic = try #require(plans[sql], "not prepared: \(sql.prefix(60))")
                    #expect(generic > 0, "planned again on every execution: \(sql.prefix(60))")
                }
            }
        }
    }
}
