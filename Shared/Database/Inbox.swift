import Foundation
import Logging
import PostgresNIO

/// Consumer-side de-duplication: an event id is claimed in the same transaction as the event's
/// side effects, so a redelivered event finds its id taken and has no second effect.
public enum Inbox {
    /// Returns true when `eventId` had not been processed by `consumer` (the caller goes on and
    /// applies the effect in this transaction); false for a duplicate.
    public static func claim(consumer: String, eventId: UUID, on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        let rows = try await connection.query(
            """
            INSERT INTO inbox (consumer, event_id) VALUES (\(consumer), \(eventId))
            ON CONFLICT DO NOTHING RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }
}
