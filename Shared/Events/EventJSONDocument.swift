#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A JSON text parsed once into a flat list of nodes (RFC 8259), for `EventJSONDecoder`: every
/// value is a node, an object's members follow it as key and value nodes, and each node knows
/// where its subtree ends, so a container skips a member without looking inside it.
///
/// Parsing validates the whole grammar (strings are checked for control characters and escape
/// syntax; their UTF-8 when a value is decoded), limits nesting, and never reads past the input.
final class EventJSONDocument: Sendable {
    enum Kind: UInt8, Sendable {
        case object, array, string, number, `true`, `false`, null

        /// The name Foundation's errors use for a JSON value's type.
        var description: String {
            switch self {
            case .object: "a dictionary"
            case .array: "an array"
            case .string: "a string"
            case .number: "number"
            case .true, .false: "bool"
            case .null: "null"
            }
        }
    }

    struct Node: Sendable {
        var kind: Kind
        /// A string: it has escape sequences (its bytes are not its value).
        var escaped: Bool
        /// A string: the first byte after the opening quote; a number: its first byte.
        var start: Int32
        /// A string: the closing quote; a number: the byte after it.
        var end: Int32
        /// The index of the node after this one's subtree.
        var next: Int32
        /// An object's members or an array's elements.
        var count: Int32
    }

    /// Deeper nesting than this is refused (the parser recurses once per level).
    static let maxDepth = 256

    let bytes: [UInt8]
    let nodes: [Node]

    init(_ bytes: [UInt8]) throws {
        guard bytes.count < Int(Int32.max) else { throw EventJSONDocument.error("The JSON text is too large", at: 0) }
        var parser = Parser()
        try bytes.withUnsafeBufferPointer { buffer in
            try parser.parseDocument(buffer)
        }
        self.bytes = bytes
        self.nodes = parser.nodes
    }

    static func error(_ message: String, at offset: Int) -> DecodingError {
        DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "The given data was not valid JSON: \(message) at byte \(offset)."))
    }

    private struct Parser {
        var nodes: [Node] = []
        var i = 0

        init() {
            nodes.reserveCapacity(64)
        }

        mutating func parseDocument(_ b: UnsafeBufferPointer<UInt8>) throws {
            skipWhitespace(b)
            try parseValue(b, depth: 0)
            skipWhitespace(b)
            guard i == b.count else { throw EventJSONDocument.error("Unexpected bytes after the value", at: i) }
        }

        mutating func skipWhitespace(_ b: UnsafeBufferPointer<UInt8>) {
            while i < b.count {
                switch b[i] {
                case 0x20, 0x09, 0x0A, 0x0D: i += 1
                default: return
                }
            }
        }

        mutating func parseValue(_ b: UnsafeBufferPointer<UInt8>, depth: Int) throws {
            guard i < b.count else { throw EventJSONDocument.error("Unexpected end of input", at: i) }
            switch b[i] {
            case UInt8(ascii: "{"): try parseContainer(b, depth: depth + 1, object: true)
            case UInt8(ascii: "["): try parseContainer(b, depth: depth + 1, object: false)
            case UInt8(ascii: "\""): try parseString(b)
            case UInt8(ascii: "t"): try parseLiteral(b, "true", .true)
            case UInt8(ascii: "f"): try parseLiteral(b, "false", .false)
            case UInt8(ascii: "n"): try parseLiteral(b, "null", .null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try parseNumber(b)
            default: throw EventJSONDocument.error("Unexpected character", at: i)
            }
        }

        /// Appends a node whose `next` and `count` are filled in when its subtree ends.
        mutating func open(_ kind: Kind, start: Int, end: Int, escaped: Bool = false) -> Int {
            nodes.append(Node(kind: kind, escaped: escaped, start: Int32(start), end: Int32(end), next: Int32(nodes.count + 1), count: 0))
            return nodes.count - 1
        }

        /// An object (`{"name": value, …}`) or an array (`[value, …]`).
        mutating func parseContainer(_ b: UnsafeBufferPointer<UInt8>, depth: Int, object: Bool) throws {
            guard depth <= EventJSONDocument.maxDepth else { throw EventJSONDocument.error("Too deeply nested", at: i) }
            let close = object ? UInt8(ascii: "}") : UInt8(ascii: "]")
            let index = open(object ? .object : .array, start: i, end: i)
            i += 1
            var count: Int32 = 0
            skipWhitespace(b)
            if i < b.count, b[i] == close {
                i += 1
            } else {
                while true {
                    skipWhitespace(b)
                    if object {
                        guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw EventJSONDocument.error("Expected a member name", at: i) }
                        try parseString(b)
                        skipWhitespace(b)
                        guard i < b.count, b[i] == UInt8(ascii: ":") else { throw EventJSONDocument.error("Expected ':'", at: i) }
                        i += 1
                        skipWhitespace(b)
                    }
                    try parseValue(b, depth: depth)
                    count += 1
                    skipWhitespace(b)
                    guard i < b.count else { throw EventJSONDocument.error("Unexpected end of input", at: i) }
                    if b[i] == UInt8(ascii: ",") {
                        i += 1
                        continue
                    }
                    guard b[i] == close else { throw EventJSONDocument.error("Expected ',' or '\(Character(Unicode.Scalar(close)))'", at: i) }
                    i += 1
                    break
                }
            }
            nodes[index].count = count
            nodes[index].next = Int32(nodes.count)
        }

        mutating func parseString(_ b: UnsafeBufferPointer<UInt8>) throws {
            let start = i + 1
            var j = start
            var escaped = false
            while true {
                guard j < b.count else { throw EventJSONDocument.error("Unterminated string", at: start - 1) }
                let c = b[j]
                if c == UInt8(ascii: "\"") { break }
                if c < 0x20 { throw EventJSONDocument.error("Unescaped control character in a string", at: j) }
                if c == UInt8(ascii: "\\") {
                    escaped = true
                    guard j + 1 < b.count else { throw EventJSONDocument.error("Unterminated string", at: start - 1) }
                    switch b[j + 1] {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
                        UInt8(ascii: "r"), UInt8(ascii: "t"):
                        j += 2
                    case UInt8(ascii: "u"):
                        guard j + 5 < b.count, (2...5).allSatisfy({ hexDigitValue(b[j + $0]) != nil }) else {
                            throw EventJSONDocument.error("Invalid \\u escape", at: j)
                        }
                        j += 6
                    default:
                        throw EventJSONDocument.error("Invalid escape", at: j)
                    }
                    continue
                }
                j += 1
            }
            _ = open(.string, start: start, end: j, escaped: escaped)
            i = j + 1
        }

        mutating func parseNumber(_ b: UnsafeBufferPointer<UInt8>) throws {
            let start = i
            func digits(_ i: inout Int) -> Int {
                let from = i
                while i < b.count, b[i] >= UInt8(ascii: "0"), b[i] <= UInt8(ascii: "9") { i += 1 }
                return i - from
            }
            var j = i
            if b[j] == UInt8(ascii: "-") { j += 1 }
            guard j < b.count else { throw EventJSONDocument.error("Invalid number", at: start) }
            if b[j] == UInt8(ascii: "0") {
                j += 1
            } else {
                guard digits(&j) > 0 else { throw EventJSONDocument.error("Invalid number", at: start) }
            }
            if j < b.count, b[j] == UInt8(ascii: ".") {
                j += 1
                guard digits(&j) > 0 else { throw EventJSONDocument.error("Invalid number", at: start) }
            }
            if j < b.count, b[j] == UInt8(ascii: "e") || b[j] == UInt8(ascii: "E") {
                j += 1
                if j < b.count, b[j] == UInt8(ascii: "+") || b[j] == UInt8(ascii: "-") { j += 1 }
                guard digits(&j) > 0 else { throw EventJSONDocument.error("Invalid number", at: start) }
            }
            _ = open(.number, start: start, end: j)
            i = j
        }

        mutating func parseLiteral(_ b: UnsafeBufferPointer<UInt8>, _ word: StaticString, _ kind: Kind) throws {
            let count = word.utf8CodeUnitCount
            guard i + count <= b.count else { throw EventJSONDocument.error("Unexpected end of input", at: i) }
            for k in 0..<count where b[i + k] != word.utf8Start[k] {
                throw EventJSONDocument.error("Unexpected character", at: i + k)
            }
            _ = open(kind, start: i, end: i + count)
            i += count
        }
    }

    // MARK: values

    /// The value of a string node (escapes resolved); nil when its bytes are not valid UTF-8.
    func string(at index: Int) -> String? {
        let node = nodes[index]
        let start = Int(node.start)
        let end = Int(node.end)
        if !node.escaped {
            return bytes.withUnsafeBufferPointer { Self.validatedString(unescaped: UnsafeBufferPointer(rebasing: $0[start..<end])) }
        }
        var out: [UInt8] = []
        out.reserveCapacity(end - start)
        var j = start
        while j < end {
            let c = bytes[j]
            guard c == UInt8(ascii: "\\") else {
                out.append(c)
                j += 1
                continue
            }
            let e = bytes[j + 1]
            j += 2
            switch e {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex4(at: j)
                j += 4
                if (0xD800...0xDBFF).contains(scalar) {
                    // A high surrogate pairs with a following \uDC00–\uDFFF; alone it is invalid.
                    guard j + 6 <= end, bytes[j] == UInt8(ascii: "\\"), bytes[j + 1] == UInt8(ascii: "u") else { return nil }
                    let low = hex4(at: j + 2)
                    guard (0xDC00...0xDFFF).contains(low) else { return nil }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    j += 6
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    return nil
                }
                guard let unicode = Unicode.Scalar(scalar), let encoded = UTF8.encode(unicode) else { return nil }
                out.append(contentsOf: encoded)
            default: out.append(e)  // " \ /
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    /// The string of an unescaped string node's bytes, nil when they are not valid UTF-8, without
    /// the generic `String(validating:as:)`, whose unspecialized path looked up generic metadata
    /// for every string (a sixth of an event's decoding). ASCII is decoded as it is (valid UTF-8
    /// decodes to the same string whether validated or repaired); other text is validated as a C
    /// string, which it can be: the parser refuses control characters, so it holds no NUL.
    private static func validatedString(unescaped utf8: UnsafeBufferPointer<UInt8>) -> String? {
        var ascii = true
        for byte in utf8 where byte >= 0x80 {
            ascii = false
            break
        }
        if ascii { return String(decoding: utf8, as: UTF8.self) }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: utf8.count + 1) { copy in
            guard let base = copy.baseAddress, let source = utf8.baseAddress else { return nil }
            UnsafeMutableRawPointer(base).copyMemory(from: source, byteCount: utf8.count)
            base[utf8.count] = 0
            return String(validatingCString: base)
        }
    }

    private func hex4(at j: Int) -> UInt32 {
        var value: UInt32 = 0
        for k in 0..<4 { value = value << 4 | UInt32(hexDigitValue(bytes[j + k]) ?? 0) }
        return value
    }

    /// Whether the string node `index` (unescaped) equals `key`'s UTF-8.
    func stringEquals(_ index: Int, _ key: String) -> Bool {
        let node = nodes[index]
        if node.escaped { return string(at: index) == key }
        let start = Int(node.start)
        let count = Int(node.end) - start
        var key = key
        return key.withUTF8 { keyBytes in
            guard keyBytes.count == count else { return false }
            guard count > 0 else { return true }
            return bytes.withUnsafeBufferPointer { b in
                guard let base = b.baseAddress, let key = keyBytes.baseAddress else { return false }
                return memcmp(base + start, key, count) == 0
            }
        }
    }

    /// A number node's text.
    func numberText(at index: Int) -> Substring {
        let node = nodes[index]
        return Substring(decoding: bytes[Int(node.start)..<Int(node.end)], as: UTF8.self)
    }

    /// A number node as an integer of type `T`, nil when it is not an integer `T` holds
    /// (a fraction or exponent is accepted when the value is whole, as Foundation's decoder does).
    func integer<T: FixedWidthInteger>(at index: Int, as: T.Type) -> T? {
        let node = nodes[index]
        var j = Int(node.start)
        let end = Int(node.end)
        let negative = bytes[j] == UInt8(ascii: "-")
        if negative { j += 1 }
        var magnitude: UInt64 = 0
        while j < end {
            let c = bytes[j]
            guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else {
                // A fraction or an exponent: whole values only.
                guard let double = Double(numberText(at: index)), let whole = T(exactly: double) else { return nil }
                return whole
            }
            let (times, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (plus, o2) = times.addingReportingOverflow(UInt64(c - UInt8(ascii: "0")))
            guard !o1, !o2 else { return nil }
            magnitude = plus
            j += 1
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return magnitude == UInt64(Int64.max) + 1 ? T(exactly: Int64.min) : T(exactly: -Int64(magnitude))
        }
        return T(exactly: magnitude)
    }
}
