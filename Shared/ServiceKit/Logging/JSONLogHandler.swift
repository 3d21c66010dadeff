import Events
import Foundation
import Logging

/// One JSON object per line on standard error: `ts` (UTC, milliseconds), `level`, `logger`,
/// `msg`, the metadata (the handler's, then the call's; nested values as strings), and `source`.
/// The request and event ids (`request.id`, `event.id`, `hb.request.id`) and the trace ids
/// (`trace_id`, `span_id`) are metadata like any other, so every line names what it belongs to.
/// Encoded by Foundation's JSONSerialization, so escaping is the standard library's.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let stream: @Sendable (Data) -> Void

    public init(label: String, metadataProvider: Logger.MetadataProvider? = nil, stream: @escaping @Sendable (Data) -> Void = JSONLogHandler.standardError) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.stream = stream
    }

    public static let standardError: @Sendable (Data) -> Void = { FileHandle.standardError.write($0) }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var object: [String: Any] = [:]
        for (key, value) in metadata { object[key] = Self.json(value) }
        if let provided = metadataProvider?.get() { for (key, value) in provided { object[key] = Self.json(value) } }
        if let own = event.metadata { for (key, value) in own { object[key] = Self.json(value) } }
        object["ts"] = Self.timestamp(Date())
        object["level"] = event.level.rawValue
        object["logger"] = label
        object["msg"] = event.message.description
        object["source"] = event.source
        guard var line = try? JSONSerialization.data(withJSONObject: object, options: [.withoutEscapingSlashes]) else { return }
        line.append(0x0A)
        stream(line)
    }

    static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let string): string
        case .stringConvertible(let convertible): convertible.description
        case .array(let values): values.map(json)
        case .dictionary(let dictionary): dictionary.mapValues(json)
        }
    }

    /// `2026-11-25T14:38:14.123Z`.
    static func timestamp(_ date: Date) -> String { Timestamp.format(date) }
}
