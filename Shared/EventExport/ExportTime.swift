import Foundation

/// `--since` / `--until` values: an RFC 3339 time (`2025-11-20T09:00:00Z`, fractional seconds and
/// offsets allowed), a UTC date (`2025-11-20`, its midnight), or a duration before now (`90m`,
/// `2h`, `7d`, `30s`, `1h30m`).
public enum ExportTime {
    public static func parse(_ text: String, now: Date = Date()) throws -> Date {
        let value = text.trimmingCharacters(in: .whitespaces)
        if let duration = durationSeconds(value) { return now.addingTimeInterval(-duration) }
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime], [.withFullDate]] {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = options
            formatter.timeZone = TimeZone(identifier: "UTC")
            if let date = formatter.date(from: value) { return date }
        }
        throw ExportError(
            "\"\(text)\" is neither a time (2025-11-20T09:00:00Z, 2025-11-20) nor a duration before now (30s, 90m, 2h, 7d, 1h30m)")
    }

    /// `1h30m` → 5400; nil when `text` is not a sequence of <number><s|m|h|d>.
    static func durationSeconds(_ text: String) -> TimeInterval? {
        guard !text.isEmpty else { return nil }
        var total: TimeInterval = 0
        var digits = ""
        for c in text {
            if c.isASCII, c.isNumber {
                digits.append(c)
                continue
            }
            guard let n = Int(digits), n <= 100_000 else { return nil }
            switch c {
            case "s": total += TimeInterval(n)
            case "m": total += TimeInterval(n) * 60
            case "h": total += TimeInterval(n) * 3600
            case "d": total += TimeInterval(n) * 86400
            default: return nil
            }
            digits = ""
        }
        return digits.isEmpty ? total : nil
    }
}

/// A mistake in what the export was asked to do, or a reason it cannot run; the message says which.
public struct ExportError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
