import Foundation
import Logging
import PostgresNIO

/// A study chat as stored and answered.
struct StudyChat: Sendable, Equatable {
    var id: String
    var from: String
    var to: String
    var chat: String
    var createdAt: Date
}

/// An `INSERT … RETURNING` that returned nothing (a broken invariant: answered with 500).
struct NoRowReturned: Error {}

/// SQL of study chats.
struct StudyChatStore: Sendable {
    let logger: Logger

    /// Whether `a` and `b` study together now: each one's queue row names the other and neither
    /// cancelled (a rating does not end the chat).
    func studyTogether(_ a: String, _ b: String, _ c: PostgresConnection) async throws -> Bool {
        for try await count in try await c.query(
            """
            SELECT count(*) FROM queue
            WHERE ((uid = \(a) AND matched_uid = \(b)) OR (uid = \(b) AND matched_uid = \(a))) AND NOT dodged
            """, logger: logger
        ).decode(Int64.self) {
            return count == 2
        }
        return false
    }

    func insert(id: String, from: String, to: String, chat: String, _ c: PostgresConnection) async throws -> StudyChat {
        let rows = try await c.query(
            "INSERT INTO chats (id, from_uid, to_uid, chat) VALUES (\(id), \(from), \(to), \(chat)) RETURNING id, from_uid, to_uid, chat, created_at",
            logger: logger)
        guard let chat = try await chats(rows).first else { throw NoRowReturned() }
        return chat
    }

    /// The chats between `a` and `b` created after `afterMilliseconds` (since 1970; exclusive, to
    /// the millisecond: an integer, so no floating-point rounding moves the bound), oldest first.
    func history(between a: String, _ b: String, afterMilliseconds: Int64, _ c: PostgresConnection) async throws -> [StudyChat] {
        try await chats(
            c.query(
                """
                SELECT id, from_uid, to_uid, chat, created_at FROM chats
                WHERE least(from_uid, to_uid) = least(\(a)::text, \(b)::text) AND greatest(from_uid, to_uid) = greatest(\(a)::text, \(b)::text)
                  AND created_at > timestamptz '1970-01-01 00:00:00+00' + \(afterMilliseconds) * interval '1 millisecond'
                ORDER BY created_at, id
                """, logger: logger))
    }

    private func chats(_ rows: PostgresRowSequence) async throws -> [StudyChat] {
        var result: [StudyChat] = []
        for try await (id, from, to, chat, createdAt) in rows.decode((String, String, String, String, Date).self) {
            result.append(StudyChat(id: id, from: from, to: to, chat: chat, createdAt: createdAt))
        }
        return result
    }
}
