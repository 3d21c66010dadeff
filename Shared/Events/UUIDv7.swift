import Foundation
import Synchronization

/// RFC 9562 version 7 UUIDs: 48-bit Unix milliseconds, then 12 bits used as a per-process
/// counter so ids made in the same millisecond still sort in creation order, then 62 random bits.
public enum UUIDv7 {
    private struct State {
        var lastMillis: UInt64 = 0
        var counter: UInt16 = 0
    }
    private static let state = Mutex(State())

    public static func generate(now: Date = Date()) -> UUID {
        let wallMillis = UInt64(max(0, Timestamp.milliseconds(now)))
        let (millis, counter) = state.withLock { s -> (UInt64, UInt16) in
            if wallMillis > s.lastMillis {
                s.lastMillis = wallMillis
                s.counter = UInt16.random(in: 0..<0x400)  // leave headroom below 0xFFF
            } else if s.counter < 0xFFF {
                s.counter += 1
            } else {
                // Counter exhausted within one millisecond: borrow the next millisecond.
                s.lastMillis += 1
                s.counter = 0
            }
            return (s.lastMillis, s.counter)
        }
        var random = SystemRandomNumberGenerator()
        let tail = random.next() as UInt64
        var b = [UInt8](repeating: 0, count: 16)
        for i in 0..<6 { b[i] = UInt8(truncatingIfNeeded: millis >> (8 * (5 - UInt64(i)))) }
        b[6] = 0x70 | UInt8(truncatingIfNeeded: counter >> 8)
        b[7] = UInt8(truncatingIfNeeded: counter)
        for i in 0..<8 { b[8 + i] = UInt8(truncatingIfNeeded: tail >> (8 * UInt64(7 - i))) }
        b[8] = 0x80 | (b[8] & 0x3F)
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    /// The creation time carried in a version 7 UUID, or nil for other versions.
    public static func timestamp(of id: UUID) -> Date? {
        let u = id.uuid
        guard u.6 >> 4 == 7 else { return nil }
        let bytes = [u.0, u.1, u.2, u.3, u.4, u.5]
        let millis = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Date(timeIntervalSince1970: Double(millis) / 1000)
    }
}

extension KeyedEncodingContainer {
    /// Writes a plain `UUID` in the wire form of every id (lower-case); Foundation's own
    /// encoding is upper-case. Decoding needs nothing: UUIDs are read in any case.
    mutating func encodeLowercased(_ uuid: UUID, forKey key: Key) throws {
        try encode(uuid.lowercased, forKey: key)
    }

    mutating func encodeLowercasedIfPresent(_ uuid: UUID?, forKey key: Key) throws {
        if let uuid { try encode(uuid.lowercased, forKey: key) }
    }
}
