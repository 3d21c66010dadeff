import Database
import Events
import Foundation
import PostgresNIO

/// An edit or deletion of a stored message, as a resume replays it (`MessageStore.changes`).
struct StoredChange: Sendable {
    var conversationId: UUID
    var messageId: MessageID
    var senderId: UserID
    /// Deleted (else edited): `content` and `mentions` are then empty.
    var deleted: Bool
    var content: String?
    var mentions: [UserID]
    /// When it was edited (its latest edit) or deleted.
    var at: Date
}

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

    /// The changes a client that saw each conversation up to its cursor (epoch milliseconds) has
    /// missed: the messages created at or before the cursor and deleted, or else edited, strictly
    /// after it — one per message, a deletion winning over edits (the current text and mentions of
    /// an edited one) — by change time, at most `limit`. Messages created after the cursor are not
    /// changes: a replay gives them as they are now. The bounds are built in SQL from the integers
    /// (as `history` does). Per conversation, each half is an ordered, limited scan of its partial
    /// index (`messages_deleted`, `messages_edited`) from the bound on: a plain join over the cursors
    /// let the planner scan the whole partial index and the history before the cursor instead
    /// (measured with EXPLAIN ANALYZE; it cannot see a joined bound's selectivity).
    func changes(after cursors: [(conversation: UUID, afterMs: Int64)], limit: Int, _ c: PostgresConnection) async throws -> [StoredChange] {
        guard !cursors.isEmpty, limit > 0 else { return [] }
        var result: [StoredChange] = []
        for try await (conversation, id, sender, deleted, content, mentions, at) in try await c.query(
            """
            WITH w AS (
                SELECT w.id, \(unescaped: Self.epoch) + w.after_ms * interval '1 millisecond' AS bound
                FROM unnest(\(cursors.map(\.conversation))::uuid[], \(cursors.map(\.afterMs))::int8[]) AS w (id, after_ms)
            )
            SELECT d.* FROM w, LATERAL (
                SELECT m.conversation_id, m.id, m.sender_id, true, NULL::text, '{}'::uuid[], m.deleted_at
                FROM messages m
                WHERE m.conversation_id = w.id AND m.deleted_at > w.bound AND m.created_at <= w.bound
                ORDER BY m.deleted_at LIMIT \(limit)
            ) d
            UNION ALL
            SELECT e.* FROM w, LATERAL (
                SELECT m.conversation_id, m.id, m.sender_id, false, m.content, m.mentions, m.edited_at
                FROM messages m
                WHERE m.conversation_id = w.id AND m.edited_at > w.bound AND m.deleted_at IS NULL AND m.created_at <= w.bound
                ORDER BY m.edited_at LIMIT \(limit)
            ) e
            ORDER BY 7, 2
            LIMIT \(limit)
            """, logger: logger
        ).decode((UUID, UUID, UUID, Bool, String?, [UUID], Date).self) {
            result.append(
                StoredChange(
                    conversationId: conversation, messageId: MessageID(id), senderId: UserID(sender), deleted: deleted, content: content,
                    mentions: mentions.map(UserID.init), at: at))
        }
        return result
    }
}
