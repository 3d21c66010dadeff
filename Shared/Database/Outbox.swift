import Events
import Foundation
import Logging
import PostgresNIO

/// The transactional outbox: events are appended in the same transaction as the state change they
/// describe, so either both happen or neither. The relay publishes them after commit.
public enum Outbox {
    /// The NOTIFY channel the relay listens on; the notification is delivered at commit.
    public static let channel = "chatsuite_outbox"

    /// Appends `event` within the caller's transaction (`connection` must be inside one).
    public static func append<P: EventPayload>(_ event: CloudEvent<P>, on connection: PostgresConnection, logger: Logger) async throws {
        let payload = try EventCoding.encode(event)
        try await appendRaw(
            eventId: event.id, topic: P.topic.name, key: event.subject, type: P.eventType, payload: payload,
            on: connection, logger: logger
        )
    }

    /// Appends a pre-encoded record; `payload == nil` publishes a tombstone for `key`.
    public static func appendRaw(
        eventId: UUID, topic: String, key: String, type: String, payload: [UInt8]?,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        let bytes = payload.map { ByteBuffer(bytes: $0) }
        _ = try await connection.query("""
            WITH inserted AS (
                INSERT INTO outbox (event_id, topic, event_key, event_type, payload)
                VALUES (\(eventId), \(topic), \(key), \(type), \(bytes))
                RETURNING id
            )
            SELECT pg_notify(\(channel), '') FROM inserted
            """, logger: logger)
    }
}
