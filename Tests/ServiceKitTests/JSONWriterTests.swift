import ClientContract
import Events
import Foundation
import NIOCore
import ServiceKit
import Testing

@Suite("JSONWriter")
struct JSONWriterTests {
    struct Sample: JSONWritable {
        var text: String
        var optional: String?
        var count: Int
        var names: [String]
        var member: MemberSummary

        func write(to json: inout JSONWriter) {
            json.beginObject()
            json.member("text", text)
            json.member("optional", optional)
            json.member("count", count)
            json.member("names", strings: names)
            json.key("member")
            member.write(to: &json)
            json.key("empty")
            json.beginArray()
            json.endArray()
            json.key("nothing")
            json.null()
            json.endObject()
        }
    }

    func parse(_ buffer: ByteBuffer) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(buffer.readableBytesView)) as? [String: Any])
    }

    @Test("escapes quotes, backslashes and every control character; keeps Korean, emoji and slashes as UTF-8")
    func escaping() throws {
        let controls = String(decoding: (0..<0x20).map { UInt8($0) }, as: UTF8.self)
        let tricky = "\"quoted\" back\\slash /path 한국어 👍🏽 \(controls) end\u{7F}"
        let member = MemberSummary(userId: UserID.generate(), email: "a@b.c", nickname: "새싹\"이", profileImage: nil)
        let sample = Sample(text: tricky, optional: nil, count: -42, names: ["", "x\ny", "가"], member: member)
        let object = try parse(sample.jsonBuffer)
        #expect(object["text"] as? String == tricky)
        #expect(object.keys.contains("optional") == false, "nil members are left out")
        #expect(object["count"] as? Int == -42)
        #expect(object["names"] as? [String] == ["", "x\ny", "가"])
        let written = try #require(object["member"] as? [String: Any])
        #expect(Set(written.keys) == ["user_id", "email", "nickname"])
        #expect(written["user_id"] as? String == member.user_id.description && written["nickname"] as? String == "새싹\"이")
        #expect((object["empty"] as? [Any])?.isEmpty == true && object["nothing"] is NSNull)
    }

    @Test("an array answer is a bare top-level array, equal to what JSONEncoder writes for the same members")
    func arraysMatchJSONEncoder() throws {
        let members = (0..<3).map {
            MemberSummary(userId: UserID.generate(), email: "u\($0)@x.y", nickname: "n\($0)", profileImage: $0 == 1 ? "/static/p.jpg" : nil)
        }
        var writer = JSONWriter()
        writer.beginArray()
        for member in members { member.write(to: &writer) }
        writer.endArray()
        let ours = try #require(try JSONSerialization.jsonObject(with: Data(writer.buffer.readableBytesView)) as? NSArray)
        let theirs = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(members)) as? NSArray)
        #expect(ours == theirs)
    }
}
