import Foundation
import Logging
import PostgresNIO

/// Consumer-side de-duplication: an event id is claimed in the same transaction as the event's
/// side effects, so a redelivered event finds its id taken and has no second effect.
public enum Inbox {
    /// Returns true when `eventId` had not been processed by `consumer` (the caller goes on and
    /// applies the effect in this transaction); false for a duplicate.
    public static func claim(consumer: String, eventId: UUID, on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        for try await _ in try await connection.execute(InboxClaim(consumer: consumer, eventId: eventId), logger: logger) { return true }
        return false
    }
}

/// Every consumed event claims its id with this statement, so it is prepared once per connection.
struct InboxClaim: PostgresPreparedStatement {
    typealias Row = Int32
    static let sql = "INSERT INTO inbox (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING 1"
    static let bindingDataTypes: [PostgresDataType] = [.text, .uuid]

    var consumer: String
    var eventId: UUID

    func makeBindings() -> PostgresBindings { PostgresBindings(values: consumer, eventId) }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int32.self) }
}
