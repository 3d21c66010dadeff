import CoreMetrics

/// Gives every metric of the process — the suite's own and any library's — a name that follows
/// Prometheus' conventions before it reaches the registry: only `[a-zA-Z0-9_:]` (dots and other
/// characters become `_`, label names too), counters end in `_total`, timers (durations, exposed
/// in seconds) in `_seconds`. So `http.server.request.duration` is scraped as
/// `http_server_request_duration_seconds`, whoever emitted it.
public struct ConventionalMetricNames: MetricsFactory {
    let base: any MetricsFactory

    public init(_ base: any MetricsFactory) {
        self.base = base
    }

    public static func sanitized(_ name: String) -> String {
        var result = String(
            name.unicodeScalars.map { scalar -> Character in
                switch scalar {
                case "a"..."z", "A"..."Z", "0"..."9", "_", ":": Character(scalar)
                default: "_"
                }
            })
        if let first = result.unicodeScalars.first, ("0"..."9").contains(first) { result = "_" + result }
        return result
    }

    static func named(_ label: String, suffix: String?) -> String {
        let name = sanitized(label)
        guard let suffix, !name.hasSuffix(suffix) else { return name }
        return name + suffix
    }

    static func labels(_ dimensions: [(String, String)]) -> [(String, String)] {
        dimensions.map { (sanitized($0.0).replacingColons(), $0.1) }
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        base.makeCounter(label: Self.named(label, suffix: "_total"), dimensions: Self.labels(dimensions))
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        base.makeFloatingPointCounter(label: Self.named(label, suffix: "_total"), dimensions: Self.labels(dimensions))
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        base.makeMeter(label: Self.named(label, suffix: nil), dimensions: Self.labels(dimensions))
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        base.makeRecorder(label: Self.named(label, suffix: nil), dimensions: Self.labels(dimensions), aggregate: aggregate)
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        base.makeTimer(label: Self.named(label, suffix: "_seconds"), dimensions: Self.labels(dimensions))
    }

    public func destroyCounter(_ handler: any CounterHandler) { base.destroyCounter(handler) }
    public func destroyMeter(_ handler: any MeterHandler) { base.destroyMeter(handler) }
    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) { base.destroyFloatingPointCounter(handler) }
    public func destroyRecorder(_ handler: any RecorderHandler) { base.destroyRecorder(handler) }
    public func destroyTimer(_ handler: any TimerHandler) { base.destroyTimer(handler) }
}

extension String {
    /// Label names may not contain `:` (metric names may).
    fileprivate func replacingColons() -> String { String(map { $0 == ":" ? "_" : $0 }) }
}
