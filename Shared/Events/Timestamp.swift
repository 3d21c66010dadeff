#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation

/// The one date format of the suite: `yyyy-MM-ddTHH:mm:ss.SSSZ` (UTC, exactly three fractional
/// digits, literal `Z`), the format JavaScript's `toISOString` writes and every iOS client parses.
///
/// Hand-written rather than `ISO8601DateFormatter`: it is thread-safe, allocation-light and never
/// drops the milliseconds (Foundation's `.iso8601` strategy does).
public enum Timestamp {
    /// Milliseconds since 1970, rounded toward negative infinity. The value is first rounded to
    /// the microsecond so that a date made from whole milliseconds (`1.234` s, which a `Double`
    /// holds as 1.23399999…) gives back exactly those milliseconds.
    @inlinable
    public static func milliseconds(_ date: Date) -> Int64 {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        return Int64((micros / 1000).rounded(.down))
    }

    /// `date` with everything below the millisecond removed (what PostgreSQL and clients keep).
    @inlinable
    public static func truncated(_ date: Date) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds(date)) / 1000)
    }

    public static func format(_ date: Date) -> String {
        format(milliseconds: milliseconds(date))
    }

    /// `yyyy-MM-ddTHH:mm:ss.SSS` (UTC, no zone): what Smooth's server wrote from a Java
    /// `LocalDateTime` and what its client parses after appending `Z` (client contract §4.1).
    public static func formatWithoutZone(_ date: Date) -> String {
        String(format(date).dropLast())
    }

    public static func format(milliseconds ms: Int64) -> String {
        var seconds = time_t(ms >= 0 ? ms / 1000 : (ms - 999) / 1000)
        let millis = Int(ms - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var bytes = [UInt8](repeating: 0, count: 24)
        func put(_ value: Int, _ width: Int, at offset: Int) {
            var v = value
            for i in stride(from: offset + width - 1, through: offset, by: -1) {
                bytes[i] = UInt8(48 + v % 10)
                v /= 10
            }
        }
        put(Int(parts.tm_year) + 1900, 4, at: 0); bytes[4] = UInt8(ascii: "-")
        put(Int(parts.tm_mon) + 1, 2, at: 5); bytes[7] = UInt8(ascii: "-")
        put(Int(parts.tm_mday), 2, at: 8); bytes[10] = UInt8(ascii: "T")
        put(Int(parts.tm_hour), 2, at: 11); bytes[13] = UInt8(ascii: ":")
        put(Int(parts.tm_min), 2, at: 14); bytes[16] = UInt8(ascii: ":")
        put(Int(parts.tm_sec), 2, at: 17); bytes[19] = UInt8(ascii: ".")
        put(millis, 3, at: 20); bytes[23] = UInt8(ascii: "Z")
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Parses RFC 3339 / ISO 8601 timestamps: `yyyy-MM-ddTHH:mm:ss[.f{1,9}](Z|±HH:mm)`.
    /// Fractions beyond milliseconds are truncated. Returns nil for anything else.
    public static func parse(_ string: String) -> Date? {
        guard let ms = parseMilliseconds(string) else { return nil }
        return Date(timeIntervalSince1970: Double(ms) / 1000)
    }

    public static func parseMilliseconds(_ string: String) -> Int64? {
        var string = string
        return string.withUTF8 { parseMilliseconds(utf8: $0) }
    }

    /// `parseMilliseconds` of a timestamp's UTF-8 bytes (a JSON string read in place).
    static func parseMilliseconds(utf8 b: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard b.count >= 20 else { return nil }
        func num(_ from: Int, _ len: Int) -> Int? {
            guard from + len <= b.count else { return nil }
            var v = 0
            for i in from..<(from + len) {
                let c = b[i]
                guard c >= 48, c <= 57 else { return nil }
                v = v * 10 + Int(c - 48)
            }
            return v
        }
        guard let year = num(0, 4), b[4] == UInt8(ascii: "-"), let month = num(5, 2), b[7] == UInt8(ascii: "-"),
            let day = num(8, 2), b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t") || b[10] == UInt8(ascii: " "),
            let hour = num(11, 2), b[13] == UInt8(ascii: ":"), let minute = num(14, 2), b[16] == UInt8(ascii: ":"),
            let second = num(17, 2)
        else { return nil }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var i = 19
        var millis = 0
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                if digits < 3 { millis = millis * 10 + Int(b[i] - 48) }
                digits += 1
                i += 1
            }
            guard digits > 0, digits <= 9 else { return nil }
            if digits < 3 {
                for _ in digits..<3 { millis *= 10 }
            }
        }
        guard i < b.count else { return nil }
        var offsetSeconds = 0
        switch b[i] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            i += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign = b[i] == UInt8(ascii: "+") ? 1 : -1
            guard let oh = num(i + 1, 2), i + 3 < b.count, b[i + 3] == UInt8(ascii: ":"), let om = num(i + 4, 2) else { return nil }
            offsetSeconds = sign * (oh * 3600 + om * 60)
            i += 6
        default:
            return nil
        }
        guard i == b.count else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let epoch = Int64(timegm(&parts)) - Int64(offsetSeconds)
        return epoch * 1000 + Int64(millis)
    }
}

extension JSONEncoder.DateEncodingStrategy {
    /// Dates as `yyyy-MM-ddTHH:mm:ss.SSSZ`.
    public static var milliseconds: Self {
        .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Timestamp.format(date))
        }
    }
}

extension JSONDecoder.DateDecodingStrategy {
    /// Accepts any RFC 3339 timestamp (fractional seconds optional).
    public static var milliseconds: Self {
        .custom { decoder in
            let container = try decoder.singleValueContainer()
            let string = try container.decode(String.self)
            guard let date = Timestamp.parse(string) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "Expected an RFC 3339 timestamp")
            }
            return date
        }
    }
}
