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
        _ = try await connection.execute(OutboxInsert(try record(event, maxEventBytes: maxEventBytes)), logger: logger)
    }

    /// Appends a pre-encoded record; `payload == nil` publishes a tombstone for `key`. Not checked
    /// against `maxEventBytes` (platform code and tests only; a record the broker refuses anyway
    /// is dead-lettered by the relay).
    public static func appendRaw(
        eventId: UUID, topic: String, key: String, type: String, payload: [UInt8]?,
        on connection: PostgresConnection, logger: Logger
    ) async throws {
        let row = OutboxRecord(eventId: eventId, topic: topic, key: key, type: type, payload: payload)
        _ = try await connection.execute(OutboxInsert(row), logger: logger)
    }

    /// `event` as the outbox row `append` writes, for a statement that writes it together with the
    /// change it describes (`insertSQL`). Refused with `OutboxEventTooLarge` like `append`.
    public static func record<P: EventPayload>(_ event: CloudEvent<P>, maxEventBytes: Int = Outbox.maxEventBytes) throws -> OutboxRecord {
        let payload = try EventCoding.encode(event)
        guard payload.count <= maxEventBytes else {
            throw OutboxEventTooLarge(eventType: P.eventType, bytes: payload.count, limit: maxEventBytes)
        }
        return OutboxRecord(eventId: event.id, topic: P.topic.name, key: event.subject, type: P.eventType, payload: payload)
    }

    /// An `INSERT` of one outbox row, bound to the seven parameters from `$firstParameter` on (in
    /// `OutboxRecord.bind(into:)` order) and written once for each row `source` (a CTE name) yields,
    /// or once without one; it returns the row's id. Every outbox write goes through this text.
    public static func insertSQL(firstParameter first: Int, from source: String? = nil) -> String {
        let values = (first..<first + 7).map { "$\($0)" }.joined(separator: ", ")
        return """
            INSERT INTO outbox (event_id, topic, event_key, event_type, payload, traceparent, tracestate)
            \(source.map { "SELECT \(values) FROM \($0)" } ?? "VALUES (\(values))")
            RETURNING id
            """
    }

    /// The relay's wake-up at commit, once per row `source` (a CTE of `insertSQL`) yields.
    public static func notifySQL(from source: String) -> String {
        "SELECT pg_notify('\(channel)', '') FROM \(source)"
    }

    /// What a statement ends with instead of `notifySQL` when its writer wakes the relay of its own
    /// process for the rows (`OutboxRelay.wake(awaiting:)`): the id of each row `source` yields.
    public static func idsSQL(from source: String) -> String {
        "SELECT id FROM \(source)"
    }
}

/// One outbox row, encoded: what `append` writes, or what a service's own statement writes with
/// `Outbox.insertSQL`. It carries the trace context current where it was made (none without
/// tracing), for the relay to put on the record.
public struct OutboxRecord: Sendable {
    public var eventId: UUID
    public var topic: String
    public var key: String
    public var type: String
    public var payload: ByteBuffer?
    public var traceparent: String?
    public var tracestate: String?

    init(eventId: UUID, topic: String, key: String, type: String, payload: [UInt8]?) {
        let trace = KafkaTracing.values()
        self.eventId = eventId
        self.topic = topic
        self.key = key
        self.type = type
        self.payload = payload.map { ByteBuffer(bytes: $0) }
        self.traceparent = trace[KafkaTracing.traceparent]
        self.tracestate = trace[KafkaTracing.tracestate]
    }

    /// The parameter types of `Outbox.insertSQL`, in order.
    public static let bindingDataTypes: [PostgresDataType] = [.uuid, .text, .text, .text, .bytea, .text, .text]

    /// Appends the row's seven parameters (`Outbox.insertSQL`) to `bindings`.
    public func bind(into bindings: inout PostgresBindings) {
        bindings.append(eventId)
        bindings.append(topic)
        bindings.append(key)
        bindings.append(type)
        bindings.append(payload)
        bindings.append(traceparent)
        bindings.append(tracestate)
    }
}

/// Every event a service writes through `append` goes through this statement, so it is prepared
/// once per connection (PostgreSQL parses and plans it once). The notification reaches the relay
/// at commit.
struct OutboxInsert: PostgresPreparedStatement {
    typealias Row = ()
    static let sql = """
        WITH inserted AS (\(Outbox.insertSQL(firstParameter: 1)))
        \(Outbox.notifySQL(from: "inserted"))
        """
    static let bindingDataTypes = OutboxRecord.bindingDataTypes

    var record: OutboxRecord

    init(_ record: OutboxRecord) {
        self.record = record
    }

    func makeBindings() -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 7)
        record.bind(into: &bindings)
        return bindings
    }

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
