import Foundation

/// A domain event's payload: one Swift type per event type, shared by producer and consumer.
public protocol EventPayload: Codable, Sendable, Equatable {
    /// CloudEvents `type`, e.g. `auth.user.registered`.
    static var eventType: String { get }
    /// The topic the event is published on.
    static var topic: Topic { get }
    /// Version of `data`'s schema; bumped on breaking changes (becomes part of `dataschema`'s
    /// file name, see `EventSchemaLocation`).
    static var schemaVersion: Int { get }
    /// The aggregate id: CloudEvents `subject` and the Kafka key (gives per-aggregate order).
    var subject: String { get }
    /// Writes this payload as the object `EventCoding.encoder()` would make of it, byte for byte
    /// (keys sorted, nil members left out, dates as `Timestamp.format`), and returns true; the
    /// default returns false and `EventCoding.encode` uses `JSONEncoder`. For the events written
    /// once per message: `JSONEncoder` cost 5 % of chat's CPU per send (docs/benchmarks.md, part 36).
    func writeJSON(to json: inout JSONWriter) -> Bool
}

extension EventPayload {
    public func writeJSON(to json: inout JSONWriter) -> Bool { false }
    public static var schemaVersion: Int { 1 }
    /// The CloudEvents `dataschema`: the URL of this type's JSON Schema (`EventSchemaLocation`).
    public static var dataschema: String { EventSchemaLocation.url(eventType: eventType, version: schemaVersion) }
    /// The name of this type's schema file in docs/schemas (and under `GET /v1/schemas/`).
    public static var schemaFileName: String { EventSchemaLocation.fileName(eventType: eventType, version: schemaVersion) }
}

/// CloudEvents 1.0 envelope in structured JSON mode.
public struct CloudEvent<Payload: EventPayload>: Codable, Sendable, Equatable {
    public var specversion: String
    public var id: UUID
    public var source: String
    public var type: String
    public var time: Date
    public var subject: String
    public var datacontenttype: String
    public var dataschema: String
    public var data: Payload

    public init(source: String, data: Payload, id: UUID = UUIDv7.generate(), time: Date = Date()) {
        self.specversion = "1.0"
        self.id = id
        self.source = source
        self.type = Payload.eventType
        self.time = Timestamp.truncated(time)
        self.subject = data.subject
        self.datacontenttype = "application/json"
        self.dataschema = Payload.dataschema
        self.data = data
    }

    enum CodingKeys: String, CodingKey {
        case specversion, id, source, type, time, subject, datacontenttype, dataschema, data
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        specversion = try c.decode(String.self, forKey: .specversion)
        guard specversion == "1.0" else {
            throw DecodingError.dataCorruptedError(forKey: .specversion, in: c, debugDescription: "Unsupported CloudEvents version \(specversion)")
        }
        let idString = try c.decode(String.self, forKey: .id)
        guard let id = UUID(parsing: idString) else {
            throw DecodingError.dataCorruptedError(forKey: .id, in: c, debugDescription: "Event id is not a UUID")
        }
        self.id = id
        source = try c.decode(String.self, forKey: .source)
        type = try c.decode(String.self, forKey: .type)
        guard type == Payload.eventType else {
            throw DecodingError.dataCorruptedError(forKey: .type, in: c, debugDescription: "Expected \(Payload.eventType), got \(type)")
        }
        time = try c.decode(Date.self, forKey: .time)
        subject = try c.decode(String.self, forKey: .subject)
        datacontenttype = try c.decodeIfPresent(String.self, forKey: .datacontenttype) ?? "application/json"
        dataschema = try c.decodeIfPresent(String.self, forKey: .dataschema) ?? Payload.dataschema
        data = try c.decode(Payload.self, forKey: .data)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(specversion, forKey: .specversion)
        try c.encode(id.lowercased, forKey: .id)
        try c.encode(source, forKey: .source)
        try c.encode(type, forKey: .type)
        try c.encode(time, forKey: .time)
        try c.encode(subject, forKey: .subject)
        try c.encode(datacontenttype, forKey: .datacontenttype)
        try c.encode(dataschema, forKey: .dataschema)
        try c.encode(data, forKey: .data)
    }
}

/// The envelope's routing attributes without `data`: enough to dispatch a record by `type`
/// before decoding the typed event, and to de-duplicate by `id`.
public struct CloudEventHeader: Decodable, Sendable, Equatable {
    public var specversion: String
    public var id: UUID
    public var source: String
    public var type: String
    public var time: Date
    public var subject: String?
}

/// Kafka record headers carried beside a structured-mode event (CloudEvents Kafka binding), so
/// tools can route on them without parsing the body.
public enum CloudEventKafkaHeader {
    public static let contentType = "content-type"
    public static let contentTypeValue = "application/cloudevents+json; charset=UTF-8"
    public static let type = "ce_type"
    public static let id = "ce_id"
}

/// Encoders and decoders configured for the suite's wire format (ms-precision dates, sorted keys
/// for stable output).
public enum EventCoding {
    public static func encoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.dateEncodingStrategy = .milliseconds
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }

    public static func decoder() -> JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .milliseconds
        return d
    }

    /// The event's record value: what `encoder()` makes of it, written by `JSONWriter` when the
    /// payload writes itself (`EventPayload.writeJSON`).
    public static func encode<P: EventPayload>(_ event: CloudEvent<P>) throws -> [UInt8] {
        var json = JSONWriter(capacity: 1024)
        json.beginObject()
        json.key("data")
        guard event.data.writeJSON(to: &json) else { return Array(try encoder().encode(event)) }
        json.member("datacontenttype", event.datacontenttype)
        json.member("dataschema", event.dataschema)
        json.member("id", event.id.lowercased)
        json.member("source", event.source)
        json.member("specversion", event.specversion)
        json.member("subject", event.subject)
        json.member("time", Timestamp.format(event.time))
        json.member("type", event.type)
        json.endObject()
        return json.bytes
    }

    /// An event from its record's value (`EventJSONDecoder`: what `decoder()` decodes, faster).
    public static func decode<P: EventPayload>(_ type: P.Type, from bytes: some Collection<UInt8>) throws -> CloudEvent<P> {
        try EventJSONDecoder().decode(CloudEvent<P>.self, from: bytes)
    }

    public static func header(from bytes: some Collection<UInt8>) throws -> CloudEventHeader {
        try EventJSONDecoder().decode(CloudEventHeader.self, from: bytes)
    }
}
