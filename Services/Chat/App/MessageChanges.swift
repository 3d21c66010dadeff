import Database
import Events
import Foundation
import PostgresNIO

/// SQL of changes to a stored message: edits and deletes by its sender.
extension MessageStore {
    /// A message of the conversation, locked for the transaction; nil when there is none (or it was deleted).
    func lockedMessage(_ id: MessageID, in conversation: Conversation, _ c: PostgresConnection) async throws -> StoredMessage? {
        try await messages(
            c.query(
                """
                SELECT \(unescaped: Self.columns) FROM messages m LEFT JOIN user_profiles p ON p.user_id = m.sender_id
                WHERE m.id = \(id.uuid) AND m.conversation_id = \(conversation.id) AND m.deleted_at IS NULL
                FOR UPDATE OF m
                """, logger: logger)
        ).first
    }

    /// Replaces the text (and with it the mentions); returns the edit time (milliseconds).
    func edit(_ id: MessageID, content: String?, mentions: [UserID], _ c: PostgresConnection) async throws -> Date {
        for try await time in try await c.query(
            """
            UPDATE messages SET content = \(content), mentions = \(mentions.map(\.uuid)),
                edited_at = date_trunc('milliseconds', clock_timestamp())
            WHERE id = \(id.uuid) RETURNING edited_at
            """, logger: logger
        ).decode(Date.self) {
            return time
        }
        throw ChatStoreError("message \(id) vanished while locked")
    }

    /// Marks the message deleted and forgets its text, files, mentions and reactions (the row stays
    /// as a tombstone, so a retried send with its nonce still finds it); returns the deletion time.
    func delete(_ id: MessageID, _ c: PostgresConnection) async throws -> Date {
        _ = try await c.query("DELETE FROM reactions WHERE message_id = \(id.uuid)", logger: logger)
        for try await time in try await c.query(
            """
            UPDATE messages SET content = NULL, files = '{}', mentions = '{}', reactions = NULL,
                deleted_at = date_trunc('milliseconds', clock_timestamp())
            WHERE id = \(id.uuid) RETURNING deleted_at
            """, logger: logger
        ).decode(Date.self) {
            return time
        }
        throw ChatStoreError("message \(id) vanished while locked")
    }
}
