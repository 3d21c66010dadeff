import Common
import Database
import Events
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Logging
import PostgresNIO
import SuiteTesting
import Testing
import TestSupport

@testable import ChatApp

/// The one-statement channel send (ChannelDirectSend.swift): the times it picks, and what its
/// statement refuses to write (those sends then take the transactional path).
@Suite("Channel sends in one statement")
struct ChannelDirectSendTests {
    @Test("a clock ahead of now: each send takes the next millisecond, exactly, in the response, the history and the event")
    func clockAhead() async throws {
        try await Self.withRoom { s, owner, member, room, db in
            let channel = try #require(UUID(uuidString: room.channel))
            // A previous message stamped an hour ahead (another replica's clock, say).
            var ahead: Int64 = 0
            for try await value in try await db.query(
                """
                UPDATE channels SET last_message_at = date_trunc('milliseconds', now()) + interval '1 hour' WHERE id = \(channel)
                RETURNING (extract(epoch FROM last_message_at) * 1000)::int8
                """
            ).decode(Int64.self) { ahead = value }
            #expect(ahead > 0)
            var times: [String] = []
            for (index, user) in [owner, member, owner].enumerated() {
                let response = try await s.send(.post, room.chats, user, json: #"{"content":"앞선 시계 \#(index)"}"#)
                #expect(response.status == .ok, "\(String(buffer: response.body))")
                times.append(try #require(jsonObject(response)?["createdAt"] as? String))
            }
            #expect(times == (1...3).map { Timestamp.format(milliseconds: ahead + Int64($0)) })
            let history = try #require(jsonArray(try await s.get(room.chats, member)))
            #expect(history.map { $0["createdAt"] as? String ?? "" } == times)
            // Stored at the exact millisecond (no lost microsecond): the history cursor is exact.
            for try await fraction in try await db.query(
                "SELECT count(*) FROM messages WHERE conversation_id = \(channel) AND extract(microseconds FROM created_at)::int8 % 1000 <> 0"
            ).decode(Int64.self) { #expect(fraction == 0) }
            #expect(try #require(jsonArray(try await s.get(room.chats + "?cursor_date=\(times[0])", owner))).count == 2)
        }
    }

    @Test("the statement writes nothing when the clock moved past its time, the sender left, or the nonce is taken; otherwise the message and its event")
    func statementGuards() async throws {
        try await Self.withRoom { s, owner, member, room, db in
            let (workspace, channel) = (WorkspaceID(try #require(UUID(uuidString: room.workspace))), ChannelID(try #require(UUID(uuidString: room.channel))))
            let (ownerId, memberId) = (UserID(try #require(UUID(uuidString: owner.id))), UserID(try #require(UUID(uuidString: member.id))))
            let store = MessageStore(logger: Logger(label: "test"))
            let read = { (user: UserID) in try await db.withConnection { try await store.sendContext(channel, in: workspace, member: user, $0) } }
            let context = try #require(try await read(memberId))
            #expect(context.lastMessage == nil && context.sender.userId == memberId && context.channel.name == "일반")
            #expect(context.nickname != nil && context.email == member.email)

            func attempt(_ context: ChannelSendContext, at time: Int64, nonce: String? = nil) async throws -> (wrote: Bool, id: MessageID, event: UUID) {
                let message = StoredMessage(
                    id: MessageID.generate(), sender: context.sender, content: "직접", files: [],
                    createdAt: Date(timeIntervalSince1970: Double(time) / 1000))
                let event = try Self.event(of: message, in: context, workspace: workspace)
                let wrote = try await db.withConnection {
                    try await store.insertDirectly(message, nonce: nonce, at: time, context: context, event: event, $0)
                }
                return (wrote, message.id, event.eventId)
            }
            /// The message's rows and its event's outbox rows.
            func counts(_ attempt: (wrote: Bool, id: MessageID, event: UUID)) async throws -> [Int64] {
                var result: [Int64] = []
                for try await (messages, events) in try await db.query(
                    """
                    SELECT (SELECT count(*) FROM messages WHERE id = \(attempt.id.uuid)), (SELECT count(*) FROM outbox WHERE event_id = \(attempt.event))
                    """
                ).decode((Int64, Int64).self) { result = [messages, events] }
                return result
            }

            let now = Timestamp.milliseconds(Date())
            let first = try await attempt(context, at: now, nonce: "n-1")
            #expect(first.wrote)
            #expect(try await counts(first) == [1, 1])
            // The clock is at `now` now: the same time, or an earlier one, writes nothing.
            for time in [now, now - 5] {
                let stale = try await attempt(context, at: time)
                #expect(!stale.wrote)
                #expect(try await counts(stale) == [0, 0])
            }
            // A retry's nonce is taken: nothing (the transactional path answers the first message).
            let retry = try await attempt(context, at: now + 1, nonce: "n-1")
            #expect(!retry.wrote)
            #expect(try await counts(retry) == [0, 0])
            // The owner's next millisecond: written.
            let ownerContext = try #require(try await read(ownerId))
            #expect(ownerContext.lastMessage == now)
            let next = try await attempt(ownerContext, at: now + 2)
            #expect(next.wrote)
            #expect(try await counts(next) == [1, 1])
            // A context that no longer matches what the event would say: nothing.
            var renamed = ownerContext
            renamed.channel.name = "옛 이름"
            var oldAlias = ownerContext
            oldAlias.channel.alias = (ownerContext.channel.alias ?? 0) + 1
            var oldProfile = ownerContext
            oldProfile.nickname = "옛 별명"
            var noProfile = ownerContext
            (noProfile.email, noProfile.nickname, noProfile.profileImage, noProfile.alias) = (nil, nil, nil, nil)
            for (offset, stale) in [renamed, oldAlias, oldProfile, noProfile].enumerated() {
                let refused = try await attempt(stale, at: now + 3 + Int64(offset))
                #expect(!refused.wrote, "case \(offset)")
                #expect(try await counts(refused) == [0, 0])
            }
            // Not in the channel any more: nothing.
            _ = try await db.query("DELETE FROM channel_members WHERE channel_id = \(channel.uuid) AND user_id = \(memberId.uuid)")
            let gone = try await attempt(context, at: now + 10)
            #expect(!gone.wrote)
            #expect(try await counts(gone) == [0, 0])
        }
    }
    @Test("a sender's kept context that went stale (channel renamed, profile changed, clock moved by another writer): the send carries what is current")
    func staleKeptContext() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user("처음 별명")
            let member = try await s.user()
            let room = try await ChannelChatTests().room(s, owner, member)
            let db = try #require(s.chatDatabase)
            let (channel, user) = (try #require(UUID(uuidString: room.channel)), try #require(UUID(uuidString: owner.id)))
            func send(_ text: String) async throws -> [String: Any] {
                let response = try await s.send(.post, room.chats, owner, json: #"{"content":"\#(text)"}"#)
                #expect(response.status == .ok, "\(String(buffer: response.body))")
                return try #require(jsonObject(response))
            }
            // The first send reads the context and keeps it; the second uses it.
            #expect(try await send("하나")["channelName"] as? String == "일반")
            #expect(try await send("둘")["channelName"] as? String == "일반")
            // What the read models would change on workspace.v1 / auth.user.v1, changed underneath.
            _ = try await db.query("UPDATE channels SET name = '새 이름' WHERE id = \(channel)")
            #expect(try await send("셋")["channelName"] as? String == "새 이름")
            _ = try await db.query("UPDATE user_profiles SET nickname = '새 별명' WHERE user_id = \(user)")
            let renamed = try await send("넷")
            #expect((renamed["user"] as? [String: Any])?["nickname"] as? String == "새 별명")
            // Another writer moved the clock an hour ahead: the next message is 1 ms after it.
            var ahead: Int64 = 0
            for try await value in try await db.query(
                """
                UPDATE channels SET last_message_at = date_trunc('milliseconds', now()) + interval '1 hour' WHERE id = \(channel)
                RETURNING (extract(epoch FROM last_message_at) * 1000)::int8
                """
            ).decode(Int64.self) { ahead = value }
            #expect(try await send("다섯")["createdAt"] as? String == Timestamp.format(milliseconds: ahead + 1))
            #expect(try await send("여섯")["createdAt"] as? String == Timestamp.format(milliseconds: ahead + 2))
            // Six messages, one event each, each with the name and nickname its response showed.
            let history = try #require(jsonArray(try await s.get(room.chats, member)))
            #expect(history.map { $0["content"] as? String ?? "" } == ["하나", "둘", "셋", "넷", "다섯", "여섯"])
            var events: [(String, String)] = []
            for try await (name, nickname) in try await db.query(
                """
                SELECT convert_from(payload, 'UTF8')::jsonb #>> '{data,channelName}', convert_from(payload, 'UTF8')::jsonb #>> '{data,sender,nickname}'
                FROM outbox WHERE event_key = \(room.channel) AND event_type = 'chat.channel-message.created' ORDER BY id
                """
            ).decode((String, String).self) { events.append((name, nickname)) }
            #expect(events.map(\.0) == ["일반", "일반", "새 이름", "새 이름", "새 이름", "새 이름"])
            #expect(events.map(\.1) == ["처음 별명", "처음 별명", "처음 별명", "새 별명", "새 별명", "새 별명"])
        }
    }

    @Test(
        "with this process's relay leading, a channel send wakes it in process for its row: no NOTIFY, each event out at once, also when PostgreSQL answers before it commits; the notifying statement still notifies"
    )
    func wakesTheRelayInProcess() async throws {
        try await Self.withRoom { s, owner, member, room, db in
            try await eventually("chat's relay leads", timeout: .seconds(30)) { try await Self.relayLeads(db) }
            /// The room's events written and published so far (a row not committed yet is in neither).
            func events() async throws -> (written: Int64, published: Int64) {
                var counts: (Int64, Int64) = (0, 0)
                for try await row in try await db.query(
                    "SELECT count(*), count(published_at) FROM outbox WHERE event_key = \(room.channel)"
                ).decode((Int64, Int64).self) { counts = row }
                return counts
            }
            try await eventually("the room's events are out", timeout: .seconds(30)) {
                let counts = try await events()
                return counts.written == counts.published
            }
            var published = try await events().published
            let heard = Locked(0)
            try await db.withConnection { listener in
                try await listener.listen(on: Outbox.channel) { notifications in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask { for try await _ in notifications { heard.withLock { $0 += 1 } } }
                        // Each event is out within a second of its send, five times, 1.2 s apart:
                        // the relay's fallback poll (every 5 s) could rescue one of them at most.
                        for index in 0..<5 {
                            let response = try await s.send(.post, room.chats, member, json: #"{"content":"깨우기 \#(index)"}"#)
                            #expect(response.status == .ok, "\(String(buffer: response.body))")
                            published += 1
                            let expected = published
                            try await eventually("send \(index) published", timeout: .seconds(1)) { try await events().published == expected }
                            try await Task.sleep(for: .milliseconds(1_200))
                        }
                        // PostgreSQL may send a statement's rows before it commits at the `Sync`
                        // after it (here a notice at commit flushes them, then the commit takes
                        // 400 ms): chat then wakes the relay before the row is visible, and the
                        // relay must look again until it is, not wait for its fallback poll.
                        _ = try await db.query(
                            """
                            CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
                            BEGIN RAISE NOTICE 'committing'; PERFORM pg_sleep(0.4); RETURN NULL; END $$
                            """)
                        _ = try await db.query(
                            """
                            CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON outbox DEFERRABLE INITIALLY DEFERRED
                            FOR EACH ROW EXECUTE FUNCTION slow_commit()
                            """)
                        for index in 0..<3 {
                            let response = try await s.send(.post, room.chats, member, json: #"{"content":"늦은 커밋 \#(index)"}"#)
                            #expect(response.status == .ok, "\(String(buffer: response.body))")
                            published += 1
                            let expected = published
                            try await eventually("slow commit \(index) published", timeout: .milliseconds(1_500)) { try await events().published == expected }
                            try await Task.sleep(for: .milliseconds(1_200))
                        }
                        _ = try await db.query("DROP TRIGGER slow_commit ON outbox")
                        #expect(heard.value == 0)
                        // The statement a send uses when the relay is elsewhere notifies.
                        let (workspace, channel) = (
                            WorkspaceID(try #require(UUID(uuidString: room.workspace))), ChannelID(try #require(UUID(uuidString: room.channel)))
                        )
                        let memberId = UserID(try #require(UUID(uuidString: member.id)))
                        let store = MessageStore(logger: Logger(label: "test"))
                        let context = try #require(try await db.withConnection { try await store.sendContext(channel, in: workspace, member: memberId, $0) })
                        let message = StoredMessage(id: MessageID.generate(), sender: context.sender, content: "알림", files: [], createdAt: Date())
                        let event = try Self.event(of: message, in: context, workspace: workspace)
                        let time = Timestamp.milliseconds(Date()) + 1_000
                        let wrote = try await db.withConnection {
                            try await store.insertDirectly(message, nonce: nil, at: time, context: context, event: event, $0)
                        }
                        #expect(wrote)
                        try await eventually("the notification", timeout: .seconds(5)) { heard.value == 1 }
                        group.cancelAll()
                    }
                }
            }
        }
    }

    @Test(
        "while chat's relay does not lead (another holds the leadership), a channel send notifies at commit; its event goes out once chat's relay leads again"
    )
    func notifiesWhileTheRelayDoesNotLead() async throws {
        try await Self.withRoom { s, owner, member, room, db in
            func published() async throws -> Int64 {
                try await db.query("SELECT count(published_at) FROM outbox WHERE event_key = \(room.channel)").decode(Int64.self).reduce(0, +)
            }
            try await eventually("chat's relay leads", timeout: .seconds(30)) { try await Self.relayLeads(db) }
            let before = try await published()
            let heard = Locked(0)
            try await db.withConnection { lock in
                // Chat's relay loses its connection (as when its backend dies); this connection
                // takes the leadership before chat's relay retries (every 2 s).
                _ = try await lock.query(PostgresQuery(unsafeSQL: "SELECT pg_terminate_backend(pid) " + Self.relayLock), logger: TestDatabase.logger)
                try await eventually("the test holds the leadership", timeout: .seconds(10)) {
                    try await lock.query("SELECT pg_try_advisory_lock(\(OutboxRelay.leaderLockId))", logger: TestDatabase.logger)
                        .decode(Bool.self).reduce(false) { $0 || $1 }
                }
                // Chat's relay has noticed its term ended by now (its connection is gone).
                try await Task.sleep(for: .seconds(1))
                try await db.withConnection { listener in
                    try await listener.listen(on: Outbox.channel) { notifications in
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            group.addTask { for try await _ in notifications { heard.withLock { $0 += 1 } } }
                            let response = try await s.send(.post, room.chats, member, json: #"{"content":"리더 없음"}"#)
                            #expect(response.status == .ok, "\(String(buffer: response.body))")
                            try await eventually("the send notified", timeout: .seconds(10)) { heard.value == 1 }
                            group.cancelAll()
                        }
                    }
                }
                #expect(try await published() == before, "no relay leads: the event waits in the outbox")
                _ = try await lock.query("SELECT pg_advisory_unlock(\(OutboxRelay.leaderLockId))", logger: TestDatabase.logger)
            }
            try await eventually("chat's relay leads again and publishes the event", timeout: .seconds(30)) { try await published() == before + 1 }
        }
    }

    /// `FROM pg_locks …`: the outbox relay's leader lock in the connection's own database (every
    /// service's relay takes the same lock id in its own database).
    static let relayLock = """
        FROM pg_locks WHERE locktype = 'advisory' AND granted
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND classid = \(Int64(OutboxRelay.leaderLockId >> 32)) AND objid = \(Int64(OutboxRelay.leaderLockId & 0xffff_ffff))
        """

    /// Whether a relay leads `db`'s outbox.
    /// Runs `body` on a stack of auth, workspace and chat with two users in one workspace's
    /// channel (`ChannelChatTests.room`), and chat's database.
    static func withRoom(_ body: @escaping @Sendable (Stack, User, User, ChannelChatTests.Room, PostgresClient) async throws -> Void) async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let member = try await s.user()
            let room = try await ChannelChatTests().room(s, owner, member)
            try await body(s, owner, member, room, try #require(s.chatDatabase))
        }
    }

    static func relayLeads(_ db: PostgresClient) async throws -> Bool {
        try await db.query(PostgresQuery(unsafeSQL: "SELECT count(*) " + relayLock)).decode(Int64.self).reduce(0, +) == 1
    }

    /// The event a send of `message` in `context`'s channel appends.
    static func event(of message: StoredMessage, in context: ChannelSendContext, workspace: WorkspaceID) throws -> OutboxRecord {
        try Outbox.record(
            CloudEvent(
                source: "chat",
                data: ChatEvents.ChannelMessageCreated(
                    messageId: message.id, workspaceId: workspace, channelId: context.channel.id, channelName: context.channel.name,
                    sender: context.sender, content: message.content, files: [], createdAt: message.createdAt, parentId: nil, mentions: nil,
                    channelAlias: context.channel.alias, parentName: nil, parentContent: nil)))
    }
}
