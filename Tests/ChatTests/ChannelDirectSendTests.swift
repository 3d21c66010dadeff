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
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let member = try await s.user()
            let room = try await ChannelChatTests().room(s, owner, member)
            let db = try #require(s.chatDatabase)
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
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let member = try await s.user()
            let room = try await ChannelChatTests().room(s, owner, member)
            let db = try #require(s.chatDatabase)
            let (workspace, channel) = (WorkspaceID(try #require(UUID(uuidString: room.workspace))), ChannelID(try #require(UUID(uuidString: room.channel))))
            let (ownerId, memberId) = (UserID(try #require(UUID(uuidString: owner.id))), UserID(try #require(UUID(uuidString: member.id))))
            let store = MessageStore(logger: Logger(label: "test"))
            let context = try #require(try await db.withConnection { try await store.sendContext(channel, in: workspace, member: memberId, $0) })
            #expect(context.lastMessage == nil && context.sender.userId == memberId && context.channel.name == "일반")

            func attempt(_ sender: UserID, at time: Int64, nonce: String? = nil) async throws -> (wrote: Bool, id: MessageID, event: UUID) {
                let message = StoredMessage(
                    id: MessageID.generate(), sender: context.sender, content: "직접", files: [],
                    createdAt: Date(timeIntervalSince1970: Double(time) / 1000))
                var stored = message
                stored.sender.userId = sender
                let event = try Outbox.record(
                    CloudEvent(
                        source: "chat",
                        data: ChatEvents.ChannelMessageCreated(
                            messageId: message.id, workspaceId: workspace, channelId: channel, channelName: context.channel.name, sender: stored.sender,
                            content: message.content, files: [], createdAt: message.createdAt, parentId: nil, mentions: nil,
                            channelAlias: context.channel.alias, parentName: nil, parentContent: nil)))
                let wrote = try await db.withConnection { try await store.insertDirectly(stored, nonce: nonce, in: channel, at: time, event: event, $0) }
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
            let first = try await attempt(memberId, at: now, nonce: "n-1")
            #expect(first.wrote)
            #expect(try await counts(first) == [1, 1])
            // The clock is at `now` now: the same time, or an earlier one, writes nothing.
            for time in [now, now - 5] {
                let stale = try await attempt(memberId, at: time)
                #expect(!stale.wrote)
                #expect(try await counts(stale) == [0, 0])
            }
            // A retry's nonce is taken: nothing (the transactional path answers the first message).
            let retry = try await attempt(memberId, at: now + 1, nonce: "n-1")
            #expect(!retry.wrote)
            #expect(try await counts(retry) == [0, 0])
            // The owner's next millisecond: written.
            let next = try await attempt(ownerId, at: now + 2)
            #expect(next.wrote)
            #expect(try await counts(next) == [1, 1])
            // Not in the channel any more: nothing.
            _ = try await db.query("DELETE FROM channel_members WHERE channel_id = \(channel.uuid) AND user_id = \(memberId.uuid)")
            let gone = try await attempt(memberId, at: now + 10)
            #expect(!gone.wrote)
            #expect(try await counts(gone) == [0, 0])
        }
    }
}
