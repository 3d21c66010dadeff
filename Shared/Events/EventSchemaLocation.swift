import Synchronization

/// Where the JSON Schema of each event type can be fetched: the CloudEvents `dataschema` of every
/// event is `<baseURL>/<file name>`, and the gateway serves the files at `GET /v1/schemas/<file>`
/// (docs/schemas, bundled with the gateway).
public enum EventSchemaLocation {
    /// The gateway's schema path at its default address (`http.port` 8080).
    public static let defaultBaseURL = "http://127.0.0.1:8080/v1/schemas"

    private static let base = Mutex<String>(defaultBaseURL)

    /// Process-wide, like `Outbox.maxEventBytes`: the platform sets it once at start from
    /// `events.schema-base-url`, before any event is made. A trailing `/` is ignored.
    public static var baseURL: String {
        get { base.withLock { $0 } }
        set {
            var value = newValue
            while value.hasSuffix("/") { value.removeLast() }
            base.withLock { $0 = value }
        }
    }

    /// The schema file of a type at a version: `<type>.json` for version 1, `<type>.v<N>.json`
    /// after a breaking change, so a changed schema always has a new URL (as CloudEvents asks).
    public static func fileName(eventType: String, version: Int) -> String {
        version == 1 ? "\(eventType).json" : "\(eventType).v\(version).json"
    }

    public static func url(eventType: String, version: Int) -> String {
        "\(baseURL)/\(fileName(eventType: eventType, version: version))"
    }
}
