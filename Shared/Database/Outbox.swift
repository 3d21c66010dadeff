import Events
import Foundation
import Kafka
import Logging
import PostgresNIO
import Synchronization

/// The transactional outbox: events are appended in the same transaction as the state change they
/// describe, so either both happen or neither. The relay publishes them after commit.
public enum Outbox {
    /// The NOTIFY channel the relay listens on; the notification is delivered at commit.
    public static let channel = "chatsuite_outbox"

    /// The default of `maxEventBytes`: half of what a Kafka broker accepts by default
    /// (`message.max.bytes`, 1 MB) and of librdkafka's own producer limit (1 000 000 bytes), so the
    /// record's key, headers and framing always fit beside it.
    public static let defaultMaxEventBytes = 512 * 1024

    /// The largest broker-safe value of `maxEventBytes`.
    public static let maxEventBytesCeiling = 900_000

    private static let eventLimit = Atomic<Int>(defaultMaxEventBytes)

    /// The largest encoded event `append` accepts. Process-wide: the platform sets it once at start
    /// from `outbox.max-event-bytes` (every service of a process reads the same setting).
    public static var maxEventBytes: Int {
        get { eventLimit.load(ordering: .relaxed) }
        set { eventLimit.store(newValue, ordering: .relaxed) }
    }

    /// Appends `event` within the caller's transaction (`connection` must be inside one). An event
    /// whose encoding is larger than `maxEventBytes` is refused with `OutboxEventTooLarge` before
    /// anything is written, so nothing a client sends can leave a row the broker would refuse.
    public static func append<P: EventPayload>(_ event: CloudEvent<P>, on connection: PostgresConnection, logger: Logger) async throws {
        try await append(event, maxEventBytes: maxEventBytes, on: connection, logger: logger)
    }

    /// `append` with an explicit limit.
    public static func append<P: EventPayload>(
        _ event: CloudEvent<P>, maxEventBytes: Int, on connection: PostgresConnection, logger: Logger
    ) async throws {
        let payload = try EventCoding.encode(event)
        guard payload.count <= maxEventBytes else {
            throw OutboxEventTooLarge(eventType: P.eventType, bytes: payload.count, limit: maxEventBytes)
        }
        try await appendRaw(
            eventId: event.id, topic: P.topic.name, key: event.subject, type: P.eventType, payload: payload,
            on: connection, logger: logger
        )
    }

    /// Appends a pre-encoded record; `payload == nil` publishes a tombstone for `key`. Not checked
    /// against `maxEventBytes` (platform code and tests only; a record the broker refuses anyway
    /// is dead-lettered by the relay).
    public static func appendRaw(
        eventId: UUID, topic: String, key: String, type: String, payload: [UInt8]?,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        // The current span's context (none without tracing), for the relay to put on the record.
        let trace = KafkaTracing.values()
        let row = OutboxInsert(
            eventId: eventId, topic: topic, key: key, type: type, payload: payload.map { ByteBuffer(bytes: $0) },
            traceparent: trace[KafkaTracing.traceparent], tracestate: trace[KafkaTracing.tracestate])
        _ = try await connection.execute(row, logger: logger)
    }
}

/// Every event a service writes goes through this statement, so it is prepared once per
/// connection (PostgreSQL parses and plans it once). The notification reaches the relay at commit.
struct OutboxInsert: PostgresPreparedStatement {
    typealias Row = ()
    static let sql = """
        WITH inserted AS (
            INSERT INTO outbox (event_id, topic, event_key, event_type, payload, traceparent, tracestate)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            RETURNING id
        )
        SELECT pg_notify('\(Outbox.channel)', '') FROM inserted
        """
    static let bindingDataTypes: [PostgresDataType] = [.uuid, .text, .text, .text, .bytea, .text, .text]

    var eventId: UUID
    var topic: String
    var key: String
    var type: String
    var payload: ByteBuffer?
    var traceparent: String?
    var tracestate: String?

    func makeBindings() -> PostgresBindings { PostgresBindings(values: eventId, topic, key, type, payload, traceparent, tracestate) }

    func decodeRow(_ row: PostgresRow) throws -> Row {}
}

/// An event too large to publish: refused by `Outbox.append` before it is written (the service's
/// error mapping answers the client E11). Field limits normally stop such input first.
public struct OutboxEventTooLarge: Error, Sendable, CustomStringConvertible {
    public let eventType: String
    public let bytes: Int
    public let limit: Int

    public init(eventType: String, bytes: Int, limit: Int) {
        self.eventType = eventType
        self.bytes = bytes
        self.limit = limit
    }

    public var description: String { "\(eventType) event of \(bytes) bytes is over the outbox limit of \(limit) bytes" }
}
