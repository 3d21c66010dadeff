import ClientContract
import Events
import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// SQL of reactions: one row per (message, emoji, user) and, on the message, the summary clients
/// see, rewritten in the same transaction (the caller holds the message's row lock).
struct ReactionStore: Sendable {
    let logger: Logger

    /// Adds (or removes) `user`'s `emoji`; returns whether anything changed.
    func set(_ emoji: String, by user: UserID, on message: MessageID, present: Bool, _ c: PostgresConnection) async throws -> Bool {
        let rows: PostgresRowSequence
        if present {
            rows = try await c.query(
                """
                INSERT INTO reactions (message_id, emoji, user_id) VALUES (\(message.uuid), \(emoji), \(user.uuid))
                ON CONFLICT DO NOTHING RETURNING 1
                """, logger: logger)
        } else {
            rows = try await c.query(
                """
                DELETE FROM reactions WHERE message_id = \(message.uuid) AND emoji = \(emoji) AND user_id = \(user.uuid) RETURNING 1
                """, logger: logger)
        }
        for try await _ in rows { return true }
        return false
    }

    /// Recomputes the message's summary from the reactions table, stores and returns it: emojis in
    /// the order they were first used, users in the order they reacted.
    func refreshSummary(of message: MessageID, _ c: PostgresConnection) async throws -> [ChatEvents.Reaction] {
        var summary: [ChatEvents.Reaction] = []
        for try await (emoji, users) in try await c.query(
            """
            SELECT emoji, array_agg(user_id ORDER BY created_at, user_id) FROM reactions WHERE message_id = \(message.uuid)
            GROUP BY emoji ORDER BY min(created_at), emoji
            """, logger: logger
        ).decode((String, [UUID]).self) {
            summary.append(ChatEvents.Reaction(emoji: emoji, count: users.count, users: users.map(UserID.init)))
        }
        let json: String? = summary.isEmpty ? nil : String(decoding: try JSONEncoder().encode(summary), as: UTF8.self)
        _ = try await c.query("UPDATE messages SET reactions = \(json)::jsonb WHERE id = \(message.uuid)", logger: logger)
        return summary
    }

    /// The stored summary (`messages.reactions`) as values.
    static func decode(_ json: String) throws -> [ChatEvents.Reaction] {
        try JSONDecoder().decode([ChatEvents.Reaction].self, from: Data(json.utf8))
    }

    /// Reaction emoji: 32 characters, 128 bytes.
    static let emojiLimit = TextLimit("emoji", characters: 32)

    /// An emoji as a path segment carries it: 1–32 characters (at most 128 bytes), no spaces,
    /// controls or slashes (a Unicode emoji, or a name like `thumbsup`).
    static func validEmoji(_ raw: String) -> String? {
        let emoji = raw.removingPercentEncoding ?? raw
        guard !emoji.isEmpty, emojiLimit.allows(emoji),
            !emoji.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control || $0 == "/" })
        else { return nil }
        return emoji
    }
}
