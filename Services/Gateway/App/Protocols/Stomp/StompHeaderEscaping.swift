/// STOMP 1.2 header escaping ("Value Encoding"):
/// `\\` ↔ backslash, `\n` ↔ LF, `\r` ↔ CR, `\c` ↔ colon. Any other escape is a
/// fatal protocol error.
enum StompHeaderEscaping {
    static let backslash: UInt8 = 0x5C
    static let lineFeed: UInt8 = 0x0A
    static let carriageReturn: UInt8 = 0x0D
    static let colon: UInt8 = 0x3A
    static let null: UInt8 = 0x00

    /// Appends the wire form of a header name or value to `output`.
    ///
    /// - Parameters:
    ///   - escaping: `false` for CONNECT/CONNECTED, which are sent verbatim.
    ///   - isName: Colons are only unrepresentable in names of unescaped frames.
    ///
    /// Octets that cannot be represented are dropped so the output is always a
    /// well-formed frame: NUL anywhere, and, when not escaping, CR/LF anywhere
    /// plus `:` in a name.
    static func appendEncoded(
        _ text: String,
        to output: inout [UInt8],
        escaping: Bool,
        isName: Bool
    ) {
        for byte in text.utf8 {
            switch byte {
            case null:
                continue
            case backslash where escaping:
                output.append(backslash)
                output.append(backslash)
            case lineFeed:
                if escaping {
                    output.append(backslash)
                    output.append(UInt8(ascii: "n"))
                }
            case carriageReturn:
                if escaping {
                    output.append(backslash)
                    output.append(UInt8(ascii: "r"))
                }
            case colon:
                if escaping {
                    output.append(backslash)
                    output.append(UInt8(ascii: "c"))
                } else if !isName {
                    output.append(colon)
                }
            default:
                output.append(byte)
            }
        }
    }

    /// Decodes the escape sequences of a raw header name or value.
    ///
    /// - Throws: ``StompParseError/invalidEscape(_:)`` for an undefined escape
    ///   (e.g. `\t`) or a trailing lone backslash.
    static func unescape(_ raw: ArraySlice<UInt8>) throws(StompParseError) -> [UInt8] {
        guard raw.contains(backslash) else { return Array(raw) }
        var output: [UInt8] = []
        output.reserveCapacity(raw.count)
        var iterator = raw.makeIterator()
        while let byte = iterator.next() {
            guard byte == backslash else {
                output.append(byte)
                continue
            }
            guard let escaped = iterator.next() else {
                throw .invalidEscape("\\")
            }
            switch escaped {
            case backslash: output.append(backslash)
            case UInt8(ascii: "n"): output.append(lineFeed)
            case UInt8(ascii: "r"): output.append(carriageReturn)
            case UInt8(ascii: "c"): output.append(colon)
            default: throw .invalidEscape("\\" + String(decoding: [escaped], as: UTF8.self))
            }
        }
        return output
    }
}
