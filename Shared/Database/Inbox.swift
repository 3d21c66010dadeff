import Foundation
import Logging
import PostgresNIO

/// Consumer-side de-duplication: an event id is claimed in the same transaction as the event's
/// side effects, so a redelivered event finds its id taken and has no second effect.
public enum Inbox {
    /// Returns true when `eventId` had not been processed by `consumer` (the caller goes on and
    /// applies the effect in this transaction); false for a duplicate.
    public static func claim(consumer: String, eventId: UUID, on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        try await claim(consumer: consumer, eventIds: [eventId], on: connection, logger: logger).contains(eventId)
    }

    /// Claims a poll's event ids in one statement; answers the ids no earlier transaction had
    /// claimed (each once, however often it occurs in `eventIds`). The caller applies those and
    /// skips the rest, in this transaction.
    public static func claim(consumer: String, eventIds: [UUID], on connection: PostgresConnection, logger: Logger) async throws -> Set<UUID> {
        var claimed = Set<UUID>()
        for try await id in try await connection.execute(InboxClaim(consumer: consumer, eventIds: eventIds), logger: logger) { claimed.insert(id) }
        return claimed
    }
}

/// Every consumed event claims its id with this statement, so it is prepared once per connection;
/// a poll's events claim theirs together (one round trip instead of one per event).
struct InboxClaim: PostgresPreparedStatement {
    typealias Row = UUID
    static let sql = "INSERT INTO inbox (consumer, event_id) SELECT $1, unnest($2::uuid[]) ON CONFLICT DO NOTHING RETURNING event_id"
    static let bindingDataTypes: [PostgresDataType] = [.text, .uuidArray]

    var consumer: String
    var eventIds: [UUID]

    func makeBindings() -> PostgresBindings { PostgresBindings(values: consumer, eventIds) }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(UUID.self) }
}
