import Foundation

/// UUIDs as text, without Foundation's `sscanf` and `sprintf`: every event carries several ids
/// and every consumer reads them, so on Linux `UUID(uuidString:)` was a tenth of an event's decoding
/// (docs/benchmarks.md, part 12).
extension UUID {
    /// Parses the canonical `8-4-4-4-12` hexadecimal form, in any case; nil for anything else
    /// (no surrounding spaces, braces or `0x`).
    public init?(parsing text: some StringProtocol) {
        let parsed = text.utf8.withContiguousStorageIfAvailable { Self.parse($0) } ?? Array(text.utf8).withUnsafeBufferPointer { Self.parse($0) }
        guard let parsed else { return nil }
        self = parsed
    }

    /// The canonical form's UTF-8 bytes (a JSON string read in place).
    static func parse(_ b: UnsafeBufferPointer<UInt8>) -> UUID? {
        guard b.count == 36, b[8] == 0x2D, b[13] == 0x2D, b[18] == 0x2D, b[23] == 0x2D else { return nil }
        var out: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var i = 0
        let ok = withUnsafeMutableBytes(of: &out) { raw -> Bool in
            for k in 0..<16 {
                if i == 8 || i == 13 || i == 18 || i == 23 { i += 1 }
                guard let high = hexDigitValue(b[i]), let low = hexDigitValue(b[i + 1]) else { return false }
                raw[k] = high << 4 | low
                i += 2
            }
            return true
        }
        return ok ? UUID(uuid: out) : nil
    }

    /// Lower-case canonical form, the form ids take on the wire everywhere in the suite.
    public var lowercased: String {
        let digits: StaticString = "0123456789abcdef"
        return withUnsafeBytes(of: uuid) { raw in
            String(unsafeUninitializedCapacity: 36) { out in
                var o = 0
                for k in 0..<16 {
                    if k == 4 || k == 6 || k == 8 || k == 10 {
                        out[o] = 0x2D
                        o += 1
                    }
                    out[o] = digits.utf8Start[Int(raw[k] >> 4)]
                    out[o + 1] = digits.utf8Start[Int(raw[k] & 0x0F)]
                    o += 2
                }
                return 36
            }
        }
    }
}

/// The value of one hexadecimal digit (either case), nil for any other byte.
func hexDigitValue(_ c: UInt8) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
    default: nil
    }
}
