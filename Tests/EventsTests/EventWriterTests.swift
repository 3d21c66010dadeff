import Events
import Foundation
import Testing

/// `EventPayload.writeJSON`: the message events written by `JSONWriter` are, byte for byte, what
/// `EventCoding.encoder()` (Foundation's `JSONEncoder`) makes of them, so a consumer, an export
/// or a schema check cannot tell which wrote an event (docs/benchmarks.md, part 36).
@Suite("Message events written without JSONEncoder")
struct EventWriterTests {
    /// A small deterministic generator, so a failure names a reproducible case.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func chance(_ inOf: UInt64) -> Bool { next() % inOf == 0 }

        /// Text with what escaping has to get right: quotes, backslashes, slashes, every control
        /// character, DEL, line and paragraph separators, a BOM, Korean and an emoji.
        mutating func text() -> String {
            let pieces: [String] = [
                "a", "Z", " ", "\"", "\\", "/", "\u{7f}", "\u{2028}", "\u{2029}", "\u{feff}", "새싹", "é", "😀", "<@u>", "{}", "[]", ":", ",",
            ]
            var s = ""
            for _ in 0..<Int(next() % 12) {
                if chance(4) {
                    s.unicodeScalars.append(Unicode.Scalar(UInt8(next() % 0x20)))
                } else {
                    s += pieces[Int(next() % UInt64(pieces.count))]
                }
            }
            return s
        }

        mutating func maybe<T>(_ make: (inout Random) -> T) -> T? { chance(2) ? nil : make(&self) }

        mutating func id<E>() -> Identifier<E> { Identifier(UUID()) }

        mutating func date() -> Date {
            Date(timeIntervalSince1970: Double(Int64(next() % 4_000_000_000_000)) / 1000 - (chance(5) ? 1_000_000_000 : 0))
        }

        mutating func sender() -> ChatEvents.Sender {
            ChatEvents.Sender(
                userId: id(), email: text(), nickname: text(), profileImage: maybe { $0.text() }, alias: maybe { Int64(bitPattern: $0.next()) })
        }
    }

    static func viaEncoder<P: EventPayload>(_ event: CloudEvent<P>) throws -> [UInt8] {
        Array(try EventCoding.encoder().encode(event))
    }

    /// `payload`'s event written by `JSONWriter` is `JSONEncoder`'s bytes and decodes back; false
    /// (after recording why) when the bytes differ.
    static func check<P: EventPayload>(_ payload: P, time: Date, case number: Int) throws -> Bool {
        let event = CloudEvent(source: "/chat", data: payload, time: time)
        var json = JSONWriter()
        #expect(payload.writeJSON(to: &json), "written by JSONWriter, not by the encoder")
        let written = try EventCoding.encode(event)
        let encoded = try viaEncoder(event)
        #expect(
            written == encoded,
            "case \(number):\n\(String(decoding: written, as: UTF8.self))\n\(String(decoding: encoded, as: UTF8.self))")
        #expect(try EventCoding.decode(P.self, from: written) == event, "case \(number)")
        return written == encoded
    }

    @Test("a channel message's event: 2 000 random payloads, the same bytes as JSONEncoder's, and they decode back")
    func channelMessages() throws {
        var random = Random(state: 0xC0FFEE)
        for case_ in 0..<2_000 {
            let payload = ChatEvents.ChannelMessageCreated(
                messageId: random.id(), workspaceId: random.id(), channelId: random.id(), channelName: random.text(), sender: random.sender(),
                content: random.maybe { $0.text() }, files: (0..<Int(random.next() % 3)).map { _ in random.text() }, createdAt: random.date(),
                parentId: random.maybe { $0.id() }, mentions: random.maybe { r in (0..<Int(r.next() % 3)).map { _ in r.id() } },
                channelAlias: random.maybe { Int64(bitPattern: $0.next()) }, parentName: random.maybe { $0.text() },
                parentContent: random.maybe { $0.text() })
            guard try Self.check(payload, time: random.date(), case: case_) else { return }
        }
    }

    @Test("a direct message's event: 2 000 random payloads, the same bytes as JSONEncoder's, and they decode back")
    func directMessages() throws {
        var random = Random(state: 0xD1_2EC7)
        for case_ in 0..<2_000 {
            let payload = ChatEvents.DirectMessageCreated(
                messageId: random.id(), workspaceId: random.maybe { $0.id() }, roomId: random.id(),
                participants: (0..<Int(1 + random.next() % 4)).map { _ in random.id() }, sender: random.sender(),
                content: random.maybe { $0.text() }, files: (0..<Int(random.next() % 3)).map { _ in random.text() }, createdAt: random.date(),
                parentId: random.maybe { $0.id() }, mentions: random.maybe { r in (0..<Int(r.next() % 3)).map { _ in r.id() } },
                parentName: random.maybe { $0.text() }, parentContent: random.maybe { $0.text() },
                roomAlias: random.maybe { Int64(bitPattern: $0.next()) }, roomName: random.maybe { $0.text() })
            guard try Self.check(payload, time: random.date(), case: case_) else { return }
        }
    }

    @Test("an event type that does not write itself is still encoded by JSONEncoder")
    func otherTypesUseTheEncoder() throws {
        let event = CloudEvent(source: "/auth", data: AuthEvents.UserDeleted(userId: UserID.generate()))
        var json = JSONWriter()
        #expect(!event.data.writeJSON(to: &json))
        #expect(try EventCoding.encode(event) == Self.viaEncoder(event))
    }
}
