import Events
import Foundation
import Kafka
import Logging
import Metrics
import PostgresNIO

/// An outbox row the broker refused for good, on its way to `outbox_dead_letters`.
struct DeadLetter: Sendable {
    var id: Int64
    var eventId: UUID
    var topic: String
    var eventType: String
    var payloadBytes: Int
    var error: KafkaError
}

/// Moves permanently refused rows out of the outbox, so the rows behind them are published.
enum OutboxDeadLetters {
    /// Moves `letters` from `outbox` to `outbox_dead_letters` in one statement (atomic), then
    /// counts them per topic and logs one warning line each (never the payload).
    static func move(_ letters: [DeadLetter], on connection: PostgresConnection, logger: Logger) async throws {
        guard !letters.isEmpty else { return }
        let ids = letters.map(\.id)
        let codes = letters.map(\.error.code)
        let errors = letters.map(\.error.message)
        _ = try await connection.query(
            """
            WITH moved AS (
                DELETE FROM outbox WHERE id = ANY(\(ids)) AND published_at IS NULL
                RETURNING id, event_id, topic, event_key, event_type, payload, created_at
            )
            INSERT INTO outbox_dead_letters (id, event_id, topic, event_key, event_type, payload, created_at, error_code, error)
            SELECT m.id, m.event_id, m.topic, m.event_key, m.event_type, m.payload, m.created_at, f.code, f.error
            FROM moved m JOIN unnest(\(ids)::bigint[], \(codes)::integer[], \(errors)::text[]) AS f(id, code, error) ON f.id = m.id
            """, logger: logger)
        for letter in letters {
            Counter(label: "outbox_dead_lettered_total", dimensions: [("topic", letter.topic)]).increment()
            logger.warning(
                "outbox record refused permanently; dead-lettered",
                metadata: [
                    "outbox.id": "\(letter.id)", "event.id": "\(letter.eventId.lowercased)", "event.type": "\(letter.eventType)",
                    "kafka.topic": "\(letter.topic)", "kafka.error_code": "\(letter.error.code)", "kafka.error": "\(letter.error.message)",
                    "outbox.payload_bytes": "\(letter.payloadBytes)",
                ])
        }
    }
}
