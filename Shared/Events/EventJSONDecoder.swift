import Foundation

/// Decodes the suite's JSON (its events) into `Decodable` types, as `EventCoding.decoder()`
/// (Foundation's `JSONDecoder` with dates as RFC 3339 timestamps) does — the same values, the
/// same errors for missing keys, wrong types and nulls — at a fraction of the cost: the text is
/// parsed once into a flat node list (`EventJSONDocument`) and containers look keys up by their
/// bytes instead of building a dictionary per object. Deliveries are decoded on every gateway and
/// consumer, once per event, so this is on the real-time path (docs/benchmarks.md, part 12).
///
/// The events decoded once per message (`EventJSONReadable`) are read without Codable's
/// containers; the others, and any JSON such a reading does not read, go through Codable.
///
/// Dates are RFC 3339 strings (`Timestamp.parse`), `UUID`s and `URL`s strings, `Data` base64, as
/// with `EventCoding.decoder()`. Tests decode every event type both ways and compare
/// (`EventJSONDecoderTests`).
public struct EventJSONDecoder: Sendable {
    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from bytes: some Collection<UInt8>) throws -> T {
        let document = try EventJSONDocument(Array(bytes))
        // The hot events are read without Codable; anything such a reading does not read is
        // decoded again with Codable, for its error.
        if let readable = T.self as? any EventJSONReadable.Type, let value = Self.read(readable, as: T.self, from: document) {
            return value
        }
        return try JSONNodeDecoder(document: document, index: 0, parentPath: [], key: nil).decodeValue(T.self)
    }

    /// `R` read from the document, as `T` (the same type, opened from the cast above); nil when
    /// the reading throws. Reading the value as `R` and casting it to `T` is a cast between one
    /// type's metadata, where reading it through the existential boxed every event (a large
    /// value: one allocation and a full dynamic cast per message, docs/benchmarks.md, part 46).
    private static func read<R: EventJSONReadable, T>(_: R.Type, as _: T.Type, from document: EventJSONDocument) -> T? {
        guard let value = try? R(reading: EventJSONNode(document: document, index: 0)) else { return nil }
        return value as? T
    }
}

/// A `Decoder` positioned on one node of a parsed document. Its coding path is put together only
/// when asked for (an error, a nested container), not for every member decoded.
private struct JSONNodeDecoder: Decoder {
    let document: EventJSONDocument
    let index: Int
    let parentPath: [any CodingKey]
    let key: (any CodingKey)?
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    var codingPath: [any CodingKey] { key.map { parentPath + [$0] } ?? parentPath }

    var node: EventJSONDocument.Node { document.nodes[index] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard node.kind == .object else { throw mismatch([String: Any].self) }
        return KeyedDecodingContainer(KeyedContainer<Key>(decoder: self, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard node.kind == .array else { throw mismatch([Any].self) }
        return UnkeyedContainer(decoder: self, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func mismatch(_ type: Any.Type) -> DecodingError {
        if node.kind == .null {
            return DecodingError.valueNotFound(
                type, .init(codingPath: codingPath, debugDescription: "Cannot get value of type \(type) -- found null value instead"))
        }
        return DecodingError.typeMismatch(
            type, .init(codingPath: codingPath, debugDescription: "Expected to decode \(type) but found \(node.kind.description) instead."))
    }

    func corrupted(_ message: String) -> DecodingError {
        DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: message))
    }

    /// A decoder for a member or element of this node's container (whose path is `path`).
    func child(_ index: Int, key: any CodingKey, path: [any CodingKey]) -> JSONNodeDecoder {
        JSONNodeDecoder(document: document, index: index, parentPath: path, key: key)
    }

    // MARK: values

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        // The types Foundation's JSONDecoder (as EventCoding configures it) decodes specially;
        // each `as! T` follows the check that T is that type.
        if T.self == String.self { return try decodeString() as! T }
        if T.self == Date.self { return try fromString(Timestamp.parse, "Expected an RFC 3339 timestamp") as! T }
        if T.self == UUID.self { return try fromString(UUID.init(parsing:), "Attempted to decode UUID from invalid UUID string.") as! T }
        if T.self == URL.self { return try fromString(URL.init(string:), "Invalid URL string.") as! T }
        if T.self == Data.self { return try fromString({ Data(base64Encoded: $0) }, "Encountered Data is not valid Base64.") as! T }
        if T.self == Decimal.self {
            guard node.kind == .number, let decimal = Decimal(string: String(document.numberText(at: index))) else { throw mismatch(Decimal.self) }
            return decimal as! T
        }
        return try T(from: self)
    }

    /// A value written as a string (a date, a UUID, …); `message` when `make` refuses it.
    func fromString<V>(_ make: (String) -> V?, _ message: String) throws -> V {
        guard let value = make(try decodeString()) else { throw corrupted(message) }
        return value
    }

    func decodeString() throws -> String {
        guard node.kind == .string else { throw mismatch(String.self) }
        guard let string = document.string(at: index) else { throw corrupted("The string is not valid UTF-8 or has an unpaired surrogate.") }
        return string
    }

    func decodeBool() throws -> Bool {
        switch node.kind {
        case .true: true
        case .false: false
        default: throw mismatch(Bool.self)
        }
    }

    func decodeInteger<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard node.kind == .number else { throw mismatch(T.self) }
        guard let value = document.integer(at: index, as: T.self) else {
            throw corrupted("Parsed JSON number <\(document.numberText(at: index))> does not fit in \(T.self).")
        }
        return value
    }

    func decodeFloatingPoint<T: BinaryFloatingPoint & LosslessStringConvertible>(_ type: T.Type) throws -> T {
        guard node.kind == .number else { throw mismatch(T.self) }
        let text = document.numberText(at: index)
        guard let value = T(String(text)), value.isFinite else { throw corrupted("Parsed JSON number <\(text)> does not fit in \(T.self).") }
        return value
    }
}

extension JSONNodeDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { node.kind == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try decodeBool() }
    func decode(_ type: String.Type) throws -> String { try decodeString() }
    func decode(_ type: Double.Type) throws -> Double { try decodeFloatingPoint(Double.self) }
    func decode(_ type: Float.Type) throws -> Float { try decodeFloatingPoint(Float.self) }
    func decode(_ type: Int.Type) throws -> Int { try decodeInteger(Int.self) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decodeInteger(Int8.self) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decodeInteger(Int16.self) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decodeInteger(Int32.self) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decodeInteger(Int64.self) }
    func decode(_ type: UInt.Type) throws -> UInt { try decodeInteger(UInt.self) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeInteger(UInt8.self) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeInteger(UInt16.self) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeInteger(UInt32.self) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeInteger(UInt64.self) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeValue(T.self) }
}

/// A coding key for array positions and `super`.
private struct IndexKey: CodingKey {
    let stringValue: String
    let intValue: Int?
    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }
    init(intValue: Int) {
        self.stringValue = "Index \(intValue)"
        self.intValue = intValue
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: JSONNodeDecoder
    let codingPath: [any CodingKey]

    /// The value node of `key`'s member; with a repeated name, the first one (as Foundation).
    func find(_ key: Key) -> Int? {
        let nodes = decoder.document.nodes
        let name = key.stringValue
        var cursor = decoder.index + 1
        for _ in 0..<Int(nodes[decoder.index].count) {
            let value = cursor + 1
            if decoder.document.stringEquals(cursor, name) { return value }
            cursor = Int(nodes[value].next)
        }
        return nil
    }

    var allKeys: [Key] {
        let nodes = decoder.document.nodes
        var keys: [Key] = []
        var cursor = decoder.index + 1
        for _ in 0..<Int(nodes[decoder.index].count) {
            if let name = decoder.document.string(at: cursor), let key = Key(stringValue: name) { keys.append(key) }
            cursor = Int(nodes[cursor + 1].next)
        }
        return keys
    }

    func contains(_ key: Key) -> Bool { find(key) != nil }

    func member(_ key: Key) throws -> JSONNodeDecoder {
        guard let index = find(key) else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "No value associated with key \(key) (\"\(key.stringValue)\")."))
        }
        return decoder.child(index, key: key, path: codingPath)
    }

    /// The member of `key`, nil when it is missing or null.
    func present(_ key: Key) -> JSONNodeDecoder? {
        guard let index = find(key), decoder.document.nodes[index].kind != .null else { return nil }
        return decoder.child(index, key: key, path: codingPath)
    }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key).decodeNil() }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try member(key).decodeBool() }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try member(key).decodeString() }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try member(key).decodeFloatingPoint(Double.self) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try member(key).decodeFloatingPoint(Float.self) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try member(key).decodeInteger(Int.self) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try member(key).decodeInteger(Int8.self) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try member(key).decodeInteger(Int16.self) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try member(key).decodeInteger(Int32.self) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try member(key).decodeInteger(Int64.self) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try member(key).decodeInteger(UInt.self) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try member(key).decodeInteger(UInt8.self) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try member(key).decodeInteger(UInt16.self) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try member(key).decodeInteger(UInt32.self) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try member(key).decodeInteger(UInt64.self) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try member(key).decodeValue(T.self) }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try present(key)?.decodeBool() }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try present(key)?.decodeString() }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try present(key)?.decodeFloatingPoint(Double.self) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try present(key)?.decodeFloatingPoint(Float.self) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try present(key)?.decodeInteger(Int.self) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try present(key)?.decodeInteger(Int8.self) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try present(key)?.decodeInteger(Int16.self) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try present(key)?.decodeInteger(Int32.self) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try present(key)?.decodeInteger(Int64.self) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try present(key)?.decodeInteger(UInt.self) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try present(key)?.decodeInteger(UInt8.self) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try present(key)?.decodeInteger(UInt16.self) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try present(key)?.decodeInteger(UInt32.self) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try present(key)?.decodeInteger(UInt64.self) }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try present(key)?.decodeValue(T.self) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try member(key).container(keyedBy: NestedKey.self)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try member(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        let key = IndexKey(stringValue: "super")
        guard let superKey = Key(stringValue: key.stringValue), let index = find(superKey) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "No value associated with key \"super\"."))
        }
        return decoder.child(index, key: key, path: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder { try member(key) }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: JSONNodeDecoder
    let codingPath: [any CodingKey]
    var count: Int? { Int(decoder.node.count) }
    private(set) var currentIndex = 0
    /// The node of the element at `currentIndex`.
    private var cursor: Int

    init(decoder: JSONNodeDecoder, codingPath: [any CodingKey]) {
        self.decoder = decoder
        self.codingPath = codingPath
        self.cursor = decoder.index + 1
    }

    var isAtEnd: Bool { currentIndex >= Int(decoder.node.count) }

    /// The next element's decoder; moves past it.
    private mutating func next(_ type: Any.Type) throws -> JSONNodeDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type, .init(codingPath: codingPath + [IndexKey(intValue: currentIndex)], debugDescription: "Unkeyed container is at end."))
        }
        let element = decoder.child(cursor, key: IndexKey(intValue: currentIndex), path: codingPath)
        cursor = Int(decoder.document.nodes[cursor].next)
        currentIndex += 1
        return element
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                Any?.self, .init(codingPath: codingPath + [IndexKey(intValue: currentIndex)], debugDescription: "Unkeyed container is at end."))
        }
        guard decoder.document.nodes[cursor].kind == .null else { return false }
        _ = try next(Any?.self)
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type).decodeBool() }
    mutating func decode(_ type: String.Type) throws -> String { try next(type).decodeString() }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type).decodeFloatingPoint(Double.self) }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type).decodeFloatingPoint(Float.self) }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type).decodeInteger(Int.self) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type).decodeInteger(Int8.self) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type).decodeInteger(Int16.self) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type).decodeInteger(Int32.self) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type).decodeInteger(Int64.self) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type).decodeInteger(UInt.self) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type).decodeInteger(UInt8.self) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type).decodeInteger(UInt16.self) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type).decodeInteger(UInt32.self) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type).decodeInteger(UInt64.self) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type).decodeValue(T.self) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next([String: Any].self).container(keyedBy: NestedKey.self)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next([Any].self).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { try next(Any.self) }
}
