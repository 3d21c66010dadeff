import Common
import Events
import Foundation
import HTTPTypes
import HummingbirdTesting
import Kafka
import NIOCore
import PostgresNIO
import SuiteTesting
import Testing
import TestSupport

/// Message texts are bounded in UTF-8 bytes as well as in characters: one character can be any
/// number of bytes ("a" followed by combining accents is a single grapheme).
@Suite("Byte limits on chat texts")
struct ChatTextLimitTests {
    /// `base` followed by `marks` combining acute accents (U+0301, 2 bytes each): one character.
    static func accented(_ base: String, _ marks: Int) -> String {
        base + String(repeating: "\u{0301}", count: marks)
    }

    static func count(_ db: PostgresClient, _ query: PostgresQuery) async throws -> Int {
        var n = 0
        for try await value in try await db.query(query).decode(Int.self) { n = value }
        return n
    }

    @Test("one character of ~1 MB (\"a\" + 520 000 combining accents) is E11; the next normal message is published at once")
    func combiningAccentFlood() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let place = try await MessageChangeTests.channel(s, owner, [])
            let flood = Self.accented("a", 520_000)
            #expect(flood.count == 1 && flood.utf8.count == 1_040_001)
            #expect(outcome(try await s.send(.post, place.chats, owner, json: #"{"content":"\#(flood)"}"#)) == "400 E11")

            let normal = try await s.send(.post, place.chats, owner, json: #"{"content":"hello"}"#)
            #expect(normal.status == .ok, "\(String(buffer: normal.body))")
            let normalId = id(jsonObject(normal), "chat_id")
            // Published promptly: nothing in the outbox waits behind a row the broker refuses.
            let db = try #require(s.chatDatabase)
            try await eventually("the normal message's event is published", timeout: .seconds(5)) {
                try await Self.count(db, "SELECT count(*)::int FROM outbox WHERE published_at IS NULL") == 0
            }
            let consumer = try TestKafka.groupConsumer(s.cluster, group: "limits-\(UUID().uuidString)", topics: [Topic.chatMessage.name])
            let first = try await withTimeout(.seconds(20), "chat.message.v1") {
                for try await message in consumer.messages {
                    return try EventCoding.decode(ChatEvents.ChannelMessageCreated.self, from: message.value ?? [])
                }
                throw TimeoutError(what: "chat.message.v1 ended")
            }
            await consumer.close()
            #expect(first.data.messageId.description == normalId && first.data.content == "hello", "the first event is the normal message")
            #expect(try await Self.count(db, "SELECT count(*)::int FROM messages") == 1, "the flood was not stored")
            #expect(try await Self.count(db, "SELECT count(*)::int FROM outbox_dead_letters") == 0)
        }
    }

    @Test("content, edits, DMs, nonces and reaction emoji: over their byte limits E11, at them accepted (JSON and multipart)")
    func everyChatText() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let member = try await s.user()
            let place = try await MessageChangeTests.channel(s, owner, [member])
            let dm = try await MessageChangeTests.dm(s, owner, member, in: place)

            // Content: 40 000 bytes. "a" + 19 999 accents is 39 999 bytes (one character).
            let atLimit = Self.accented("a", 19_999)
            let overLimit = Self.accented("a", 20_000)
            for target in [place, dm] {
                #expect(outcome(try await s.send(.post, target.chats, owner, json: #"{"content":"\#(overLimit)"}"#)) == "400 E11")
                #expect(outcome(try await s.multipartRequest(.post, target.chats, owner, fields: ["content": overLimit])) == "400 E11")
                #expect(outcome(try await s.send(.post, target.chats, owner, json: #"{"content":"\#(atLimit)"}"#)) == "200")
            }
            // The character limit is unchanged: 10 000 Hangul syllables (30 000 bytes) fit.
            let korean = String(repeating: "가", count: 10_000)
            #expect(outcome(try await s.send(.post, place.chats, owner, json: #"{"content":"\#(korean)"}"#)) == "200")
            #expect(outcome(try await s.send(.post, place.chats, owner, json: #"{"content":"\#(korean)가"}"#)) == "400 E11")

            // Edits: the same limit, and the message is unchanged.
            let message = id(jsonObject(try await s.send(.post, place.chats, owner, json: #"{"content":"원래"}"#)), "chat_id")
            #expect(outcome(try await s.send(.put, place.chat(message), owner, json: #"{"content":"\#(overLimit)"}"#)) == "400 E11")
            let history = try #require(jsonArray(try await s.get(place.chats, member)))
            #expect(history.first { id($0, "chat_id") == message }?["content"] as? String == "원래")

            // Nonces: 64 characters, 256 bytes.
            let nonceOver = Self.accented("n", 128)  // 257 bytes
            #expect(outcome(try await s.send(.post, place.chats, owner, json: #"{"content":"x","nonce":"\#(nonceOver)"}"#)) == "400 E11")
            #expect(outcome(try await s.multipartRequest(.post, place.chats, owner, fields: ["content": "x", "nonce": nonceOver])) == "400 E11")
            #expect(outcome(try await s.send(.post, place.chats, owner, json: #"{"content":"x","nonce":"\#(Self.accented("n", 127))"}"#)) == "200")

            // Reaction emoji: 32 characters, 128 bytes. 👍 is 4 bytes.
            #expect(outcome(try await s.request(.put, place.reaction(message, Self.accented("👍", 63)), token: member.token)) == "400 E11")
            #expect(outcome(try await s.request(.put, place.reaction(message, Self.accented("👍", 62)), token: member.token)) == "200")

            let db = try #require(s.chatDatabase)
            try await eventually("every accepted change is published", timeout: .seconds(10)) {
                try await Self.count(db, "SELECT count(*)::int FROM outbox WHERE published_at IS NULL") == 0
            }
        }
    }
}
