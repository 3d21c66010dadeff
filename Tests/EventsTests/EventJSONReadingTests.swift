import Foundation
import Testing

@testable import Events

/// The events `EventJSONDecoder` reads without Codable (`EventJSONReadable`), against Foundation's
/// `JSONDecoder` as `EventCoding.decoder()` configures it: a reading succeeds exactly where
/// Foundation does, with the same value, and through `EventJSONDecoder` every refusal is still
/// Codable's error. Each sample sets every member, so a member a reading drops fails the check.
@Suite("Event JSON readings")
struct EventJSONReadingTests {
    static let now = Timestamp.truncated(Date())
    static let sender = ChatEvents.Sender(
        userId: .generate(), email: "minji@example.com", nickname: "민지 \"m\"", profileImage: "/static/profiles/a.jpg", alias: 42)

    static let channelMessage = ChatEvents.ChannelMessageCreated(
        messageId: .generate(), workspaceId: .generate(), channelId: .generate(), channelName: "일반", sender: sender,
        content: "안녕하세요 \\ \"quoted\"\n😀", files: ["/static/files/a.png", "/static/files/b.pdf"], createdAt: now, parentId: .generate(),
        mentions: [.generate(), .generate()], channelAlias: 7, parentName: "지수", parentContent: "원래 메시지")

    static let directMessage = ChatEvents.DirectMessageCreated(
        messageId: .generate(), workspaceId: .generate(), roomId: .generate(), participants: [.generate(), .generate()], sender: sender,
        content: "hello", files: ["/static/files/c.png"], createdAt: now, parentId: .generate(), mentions: [.generate()],
        parentName: "minji", parentContent: "earlier", roomAlias: 12, roomName: "group")

    static let presence = PresenceEvents.StatusChanged(userId: .generate(), status: .offline, lastSeen: now, workspaceIds: [.generate(), .generate()])

    /// Every stored member of `value` (and of its nested structs) is set: none is nil.
    func expectEveryMemberSet(_ value: Any, path: String = "", sourceLocation: SourceLocation = #_sourceLocation) {
        for child in Mirror(reflecting: value).children {
            let name = "\(path).\(child.label ?? "?")"
            let inner = Mirror(reflecting: child.value)
            if inner.displayStyle == .optional {
                if let some = inner.children.first {
                    expectEveryMemberSet(some.value, path: name, sourceLocation: sourceLocation)
                } else {
                    Issue.record("the sample leaves \(name) nil: a reading that drops it would pass", sourceLocation: sourceLocation)
                }
            } else if inner.displayStyle == .struct, child.value is any Codable {
                expectEveryMemberSet(child.value, path: name, sourceLocation: sourceLocation)
            }
        }
    }

    /// The reading of `T` alone (no Codable fallback): the value, or nil where it does not read.
    func read<T: EventJSONReadable>(_ type: T.Type, _ bytes: [UInt8]) -> T? {
        guard let document = try? EventJSONDocument(bytes) else { return nil }
        return try? T(reading: EventJSONNode(document: document, index: 0))
    }

    @Test func samplesReadAsFoundationDecodes() throws {
        func check<P: EventPayload & EventJSONReadable & Equatable>(_ payload: P) throws {
            expectEveryMemberSet(payload)
            let event = CloudEvent(source: "test", data: payload)
            let bytes = try EventCoding.encode(event)
            let foundation = try EventCoding.decoder().decode(CloudEvent<P>.self, from: Data(bytes))
            #expect(read(CloudEvent<P>.self, bytes) == foundation)
            #expect(read(CloudEvent<P>.self, bytes)?.data == payload)
            #expect(read(CloudEventHeader.self, bytes) == (try EventCoding.decoder().decode(CloudEventHeader.self, from: Data(bytes))))
            // And with every optional member left out.
            let sparse = try EventCoding.encode(CloudEvent(source: "test", data: try EventCoding.decoder().decode(P.self, from: sparseJSON(of: payload))))
            #expect(read(CloudEvent<P>.self, sparse) == (try EventCoding.decoder().decode(CloudEvent<P>.self, from: Data(sparse))))
        }
        try check(Self.channelMessage)
        try check(Self.directMessage)
        try check(Self.presence)
    }

    /// `payload`'s JSON without the members Foundation decodes it without.
    func sparseJSON<P: EventPayload>(of payload: P) throws -> Data {
        var object = try #require(try JSONSerialization.jsonObject(with: Data(try EventCoding.encoder().encode(payload))) as? [String: Any])
        for key in object.keys.sorted() {
            var without = object
            without.removeValue(forKey: key)
            let data = try JSONSerialization.data(withJSONObject: without)
            if (try? EventCoding.decoder().decode(P.self, from: data)) != nil { object = without }
        }
        return try JSONSerialization.data(withJSONObject: object)
    }

    /// Every member of every sample, at every depth, removed or replaced by a value of each JSON
    /// type: the reading and Foundation agree on whether it decodes and on the value, and
    /// `EventJSONDecoder` (reading, then Codable) agrees with Foundation too.
    @Test func everyMutationAgreesWithFoundation() throws {
        func check<P: EventPayload & EventJSONReadable & Equatable>(_ payload: P) throws -> Int {
            let original = try JSONSerialization.jsonObject(with: Data(try EventCoding.encode(CloudEvent(source: "test", data: payload))))
            var checked = 0
            for path in Self.paths(in: original) {
                for replacement in Self.replacements {
                    let mutated = Self.replacing(path, in: original, with: replacement)
                    let bytes = Array(try JSONSerialization.data(withJSONObject: mutated, options: [.sortedKeys]))
                    let foundation = try? EventCoding.decoder().decode(CloudEvent<P>.self, from: Data(bytes))
                    let reading = read(CloudEvent<P>.self, bytes)
                    let decoder = try? EventJSONDecoder().decode(CloudEvent<P>.self, from: bytes)
                    let described = "\(P.self) \(path.map(String.init(describing:)).joined(separator: ".")) → \(replacement ?? "removed")"
                    #expect(reading == foundation, "\(described)")
                    #expect(decoder == foundation, "\(described)")
                    let header = try? EventCoding.decoder().decode(CloudEventHeader.self, from: Data(bytes))
                    #expect(read(CloudEventHeader.self, bytes) == header, "header: \(described)")
                    checked += 1
                }
            }
            return checked
        }
        let checked = try check(Self.channelMessage) + check(Self.directMessage) + check(Self.presence)
        #expect(checked > 500)
    }

    /// Refusals through `EventJSONDecoder` keep Codable's errors and coding paths.
    @Test func refusalsKeepCodablesErrors() throws {
        var object = try #require(
            try JSONSerialization.jsonObject(with: Data(try EventCoding.encode(CloudEvent(source: "test", data: Self.channelMessage)))) as? [String: Any])
        var data = try #require(object["data"] as? [String: Any])
        var sender = try #require(data["sender"] as? [String: Any])
        sender["userId"] = "not-a-uuid"
        data["sender"] = sender
        object["data"] = data
        let bytes = Array(try JSONSerialization.data(withJSONObject: object))
        do {
            _ = try EventJSONDecoder().decode(CloudEvent<ChatEvents.ChannelMessageCreated>.self, from: bytes)
            Issue.record("decoded a sender whose id is not a UUID")
        } catch DecodingError.dataCorrupted(let context) {
            #expect(context.codingPath.map(\.stringValue) == ["data", "sender", "userId"])
        }
        data.removeValue(forKey: "channelName")
        object["data"] = data
        let withoutName = Array(try JSONSerialization.data(withJSONObject: object))
        do {
            _ = try EventJSONDecoder().decode(CloudEvent<ChatEvents.ChannelMessageCreated>.self, from: withoutName)
            Issue.record("decoded a message without its channel's name")
        } catch DecodingError.keyNotFound(let key, _) {
            #expect(key.stringValue == "channelName")
        }
    }

    /// Member names and values written with escapes read as their values do.
    @Test func escapesReadAsTheirValues() throws {
        let bytes = try EventCoding.encode(CloudEvent(source: "test", data: Self.presence))
        let escaped = String(decoding: bytes, as: UTF8.self)
            .replacingOccurrences(of: "\"userId\"", with: "\"\\u0075serId\"")
            .replacingOccurrences(of: "\"offline\"", with: "\"\\u006fffline\"")
            .replacingOccurrences(of: Self.presence.userId.description, with: Self.presence.userId.description.replacingOccurrences(of: "-", with: "\\u002d"))
        #expect(escaped.contains("\\u0075serId") && escaped.contains("\\u002d"))
        let value = read(CloudEvent<PresenceEvents.StatusChanged>.self, Array(escaped.utf8))
        #expect(value?.data == Self.presence)
        #expect(value == (try EventCoding.decoder().decode(CloudEvent<PresenceEvents.StatusChanged>.self, from: Data(escaped.utf8))))
    }

    /// A path step: an object's member or an array's element.
    enum Step: CustomStringConvertible {
        case key(String)
        case index(Int)
        var description: String {
            switch self {
            case .key(let key): key
            case .index(let index): "\(index)"
            }
        }
    }

    /// What each member is replaced with (nil: removed); made per use, as `Any` is not `Sendable`.
    static var replacements: [Any?] {
        [
            nil, NSNull(), 7, -1, 1.5, true, "", "x", "6f9619ff-8b86-d011-b42d-00c04fc964ff", "2026-11-29T10:00:00.123+09:00", "1.0",
            "online", [String](), ["x"], [String: Any](),
        ]
    }

    static func paths(in value: Any, prefix: [Step] = []) -> [[Step]] {
        var paths: [[Step]] = []
        if let object = value as? [String: Any] {
            for (key, member) in object.sorted(by: { $0.key < $1.key }) {
                paths.append(prefix + [.key(key)])
                paths += Self.paths(in: member, prefix: prefix + [.key(key)])
            }
        } else if let array = value as? [Any] {
            for (index, element) in array.enumerated() {
                paths.append(prefix + [.index(index)])
                paths += Self.paths(in: element, prefix: prefix + [.index(index)])
            }
        }
        return paths
    }

    /// `value` with the member or element at `path` replaced (nil: removed).
    static func replacing(_ path: [Step], in value: Any, with replacement: Any?) -> Any {
        guard let step = path.first else { return replacement ?? NSNull() }
        let rest = Array(path.dropFirst())
        switch step {
        case .key(let key):
            var object = value as? [String: Any] ?? [:]
            if rest.isEmpty, replacement == nil {
                object.removeValue(forKey: key)
            } else {
                object[key] = replacing(rest, in: object[key] ?? NSNull(), with: replacement)
            }
            return object
        case .index(let index):
            var array = value as? [Any] ?? []
            if rest.isEmpty, replacement == nil {
                array.remove(at: index)
            } else {
                array[index] = replacing(rest, in: array[index], with: replacement)
            }
            return array
        }
    }
}
