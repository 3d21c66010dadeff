import Foundation

/// A type `EventJSONDecoder` reads straight from the parsed document, member by member, without
/// Codable's containers: the events every gateway and consumer decodes once per message
/// (`EventJSONReaders.swift`). Codable's generic path cost about 20 µs per message in the
/// gateway, a third of it the CloudEvents envelope (docs/benchmarks.md, part 23).
///
/// A reading only ever succeeds with the value Codable would decode. Anything it does not read
/// the way Codable would (a missing member, a wrong type, an escaped id) throws, and
/// `EventJSONDecoder` then decodes with Codable, so errors keep their types and coding paths.
/// `EventJSONReadingTests` checks both promises against Foundation's decoder, member by member.
protocol EventJSONReadable {
    init(reading node: EventJSONNode) throws
}

/// One value of a parsed `EventJSONDocument`.
struct EventJSONNode {
    let document: EventJSONDocument
    let index: Int

    /// What a reading throws when the JSON is not what it reads.
    struct Unread: Error {}

    private var node: EventJSONDocument.Node { document.nodes[index] }

    var isNull: Bool { node.kind == .null }

    /// An object's member `key`: the first of a repeated name, as Codable reads it.
    func member(_ key: StaticString) throws -> EventJSONNode {
        guard let found = try find(key) else { throw Unread() }
        return found
    }

    /// An object's member `key`, nil when it is missing or null (an optional's `decodeIfPresent`).
    func presentMember(_ key: StaticString) throws -> EventJSONNode? {
        guard let found = try find(key), !found.isNull else { return nil }
        return found
    }

    private func find(_ key: StaticString) throws -> EventJSONNode? {
        let nodes = document.nodes
        guard nodes[index].kind == .object else { throw Unread() }
        var cursor = index + 1
        for _ in 0..<Int(nodes[index].count) {
            let value = cursor + 1
            if document.stringEquals(cursor, key) { return EventJSONNode(document: document, index: value) }
            cursor = Int(nodes[value].next)
        }
        return nil
    }

    func string() throws -> String {
        guard node.kind == .string, let string = document.string(at: index) else { throw Unread() }
        return string
    }

    /// A string's bytes in place; nil when it has escapes (their bytes are not its value).
    private func unescapedBytes<T>(_ body: (UnsafeBufferPointer<UInt8>) -> T) throws -> T? {
        let node = self.node
        guard node.kind == .string else { throw Unread() }
        guard !node.escaped else { return nil }
        return document.bytes.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[Int(node.start)..<Int(node.end)])) }
    }

    func uuid() throws -> UUID {
        // Escaped: the string's value, parsed as Codable parses it.
        guard let parsed = try unescapedBytes(UUID.parse) ?? UUID(parsing: try string()) else { throw Unread() }
        return parsed
    }

    func identifier<Entity>() throws -> Identifier<Entity> { Identifier(try uuid()) }

    /// An RFC 3339 timestamp (`Timestamp.parse`, as the suite's Codable dates).
    func date() throws -> Date {
        guard let ms = try unescapedBytes(Timestamp.parseMilliseconds(utf8:)) ?? Timestamp.parseMilliseconds(try string()) else { throw Unread() }
        return Date(timeIntervalSince1970: Double(ms) / 1000)
    }

    func integer<T: FixedWidthInteger>(_: T.Type = T.self) throws -> T {
        guard node.kind == .number, let value = document.integer(at: index, as: T.self) else { throw Unread() }
        return value
    }

    func array<T>(_ element: (EventJSONNode) throws -> T) throws -> [T] {
        let nodes = document.nodes
        guard nodes[index].kind == .array else { throw Unread() }
        let count = Int(nodes[index].count)
        var out: [T] = []
        out.reserveCapacity(count)
        var cursor = index + 1
        for _ in 0..<count {
            out.append(try element(EventJSONNode(document: document, index: cursor)))
            cursor = Int(nodes[cursor].next)
        }
        return out
    }

    func read<T: EventJSONReadable>(_: T.Type = T.self) throws -> T { try T(reading: self) }
}

extension EventJSONDocument {
    /// Whether the string node `index` equals `key` (a member name of a reading).
    func stringEquals(_ index: Int, _ key: StaticString) -> Bool {
        let node = nodes[index]
        guard !node.escaped, key.hasPointerRepresentation else { return string(at: index) == key.description }
        let start = Int(node.start)
        let count = Int(node.end) - start
        guard key.utf8CodeUnitCount == count else { return false }
        guard count > 0 else { return true }
        return bytes.withUnsafeBufferPointer { b in
            guard let base = b.baseAddress else { return false }
            return memcmp(base + start, key.utf8Start, count) == 0
        }
    }
}
