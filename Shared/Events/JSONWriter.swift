import NIOCore

/// Writes JSON straight into a `ByteBuffer`, for the hot answers (message lists) and the hot
/// events (`EventPayload.writeJSON`): Foundation's `JSONEncoder` was the largest cost of a
/// 50-message history request (it boxes every value and builds a container per object), and of
/// encoding a channel message's event. Keys are written exactly as given; strings are escaped as
/// `EventCoding.encoder()` escapes them (RFC 8259: quote, backslash and control characters, the
/// usual five as short escapes; everything else, `/` included, is UTF-8 as is).
public struct JSONWriter {
    public private(set) var buffer: ByteBuffer
    /// Per open object/array: whether the next member needs a comma.
    private var needsComma: [Bool] = []
    /// A key was just written: the next value is its value, not a new member.
    private var afterKey = false

    public init(capacity: Int = 1024) {
        buffer = ByteBufferAllocator().buffer(capacity: capacity)
    }

    /// What was written, as bytes.
    public var bytes: [UInt8] { Array(buffer.readableBytesView) }

    public mutating func beginObject() {
        separate()
        buffer.writeInteger(UInt8(ascii: "{"))
        needsComma.append(false)
    }

    public mutating func endObject() {
        needsComma.removeLast()
        buffer.writeInteger(UInt8(ascii: "}"))
    }

    public mutating func beginArray() {
        separate()
        buffer.writeInteger(UInt8(ascii: "["))
        needsComma.append(false)
    }

    public mutating func endArray() {
        needsComma.removeLast()
        buffer.writeInteger(UInt8(ascii: "]"))
    }

    /// A member's key; the value written next belongs to it.
    public mutating func key(_ name: StaticString) {
        separate()
        buffer.writeInteger(UInt8(ascii: "\""))
        buffer.writeStaticString(name)
        buffer.writeInteger(UInt8(ascii: "\""))
        buffer.writeInteger(UInt8(ascii: ":"))
        afterKey = true
    }

    public mutating func string(_ value: String) {
        separate()
        buffer.writeInteger(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { bytes in
            var start = 0
            for (i, byte) in bytes.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                if start < i { buffer.writeBytes(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[start..<i])) }
                writeEscaped(byte)
                start = i + 1
            }
            if start < bytes.count { buffer.writeBytes(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[start...])) }
        }
        buffer.writeInteger(UInt8(ascii: "\""))
    }

    /// `value` as a JSON string literal, escaped as `string(_:)` escapes.
    public static func quoted(_ value: String) -> String {
        var writer = JSONWriter(capacity: value.utf8.count + 8)
        writer.string(value)
        return String(buffer: writer.buffer)
    }

    public mutating func int(_ value: Int) {
        separate()
        buffer.writeString(String(value))
    }

    public mutating func bool(_ value: Bool) {
        separate()
        if value { buffer.writeStaticString("true") } else { buffer.writeStaticString("false") }
    }

    public mutating func null() {
        separate()
        buffer.writeStaticString("null")
    }

    /// `key: value`, or nothing when the value is nil (what `encodeIfPresent` does).
    public mutating func member(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        key(name)
        string(value)
    }

    public mutating func member(_ name: StaticString, _ value: Bool) {
        key(name)
        bool(value)
    }

    public mutating func member(_ name: StaticString, _ value: Int) {
        key(name)
        int(value)
    }

    /// `key: value`, or nothing when the value is nil.
    public mutating func member(_ name: StaticString, _ value: Int64?) {
        guard let value else { return }
        member(name, Int(value))
    }

    public mutating func member<Entity>(_ name: StaticString, _ value: Identifier<Entity>?) {
        guard let value else { return }
        key(name)
        string(value.description)
    }

    public mutating func member(_ name: StaticString, strings: [String]) {
        key(name)
        beginArray()
        for value in strings { string(value) }
        endArray()
    }

    public mutating func member<Entity>(_ name: StaticString, ids: [Identifier<Entity>]) {
        key(name)
        beginArray()
        for value in ids { string(value.description) }
        endArray()
    }

    private mutating func separate() {
        if afterKey {
            afterKey = false
            return
        }
        guard let last = needsComma.last else { return }
        if last { buffer.writeInteger(UInt8(ascii: ",")) } else { needsComma[needsComma.count - 1] = true }
    }

    private mutating func writeEscaped(_ byte: UInt8) {
        buffer.writeInteger(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""): buffer.writeInteger(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): buffer.writeInteger(UInt8(ascii: "\\"))
        case 0x0A: buffer.writeInteger(UInt8(ascii: "n"))
        case 0x0D: buffer.writeInteger(UInt8(ascii: "r"))
        case 0x09: buffer.writeInteger(UInt8(ascii: "t"))
        case 0x08: buffer.writeInteger(UInt8(ascii: "b"))
        case 0x0C: buffer.writeInteger(UInt8(ascii: "f"))
        default:
            let hex: [UInt8] = Array("0123456789abcdef".utf8)
            buffer.writeStaticString("u00")
            buffer.writeInteger(hex[Int(byte >> 4)])
            buffer.writeInteger(hex[Int(byte & 0x0F)])
        }
    }
}
