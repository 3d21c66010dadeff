import Events
import Foundation
import Testing

/// `EventJSONDecoder` against Foundation's `JSONDecoder` as `EventCoding.decoder()` configures it:
/// the same values for every event type and for JSON's corners, an error wherever either refuses.
@Suite("Event JSON decoder")
struct EventJSONDecoderTests {
    /// Decodes with both; both must succeed with equal values or both fail.
    @discardableResult
    func both<T: Decodable & Equatable>(_ type: T.Type, _ json: String) throws -> T? {
        let bytes = Array(json.utf8)
        let foundation = Result { try EventCoding.decoder().decode(T.self, from: Data(bytes)) }
        let fast = Result { try EventJSONDecoder().decode(T.self, from: bytes) }
        switch (foundation, fast) {
        case (.success(let a), .success(let b)):
            #expect(a == b, "\(json)")
            return b
        case (.failure, .failure):
            return nil
        case (.success(let a), .failure(let error)):
            Issue.record("Foundation decoded \(a) from \(json); EventJSONDecoder threw \(error)")
        case (.failure(let error), .success(let b)):
            Issue.record("EventJSONDecoder decoded \(b) from \(json); Foundation threw \(error)")
        }
        return nil
    }

    @Test func everyEventTypeDecodesAsFoundationDoes() throws {
        func check<P: EventPayload>(_ payload: P) throws {
            let bytes = try EventSamples.encoded(payload)
            let foundation = try EventCoding.decoder().decode(CloudEvent<P>.self, from: Data(bytes))
            let fast = try EventJSONDecoder().decode(CloudEvent<P>.self, from: bytes)
            #expect(fast == foundation)
            #expect(fast.data == payload)
            #expect(try EventCoding.header(from: bytes).type == P.eventType)
        }
        let samples = EventSamples.all()
        #expect(samples.count >= EventCatalog.payloadTypes.count)
        for sample in samples { try check(sample) }
    }

    struct Fields: Codable, Equatable {
        var text: String
        var count: Int
        var big: Int64?
        var small: UInt8?
        var ratio: Double?
        var flag: Bool?
        var when: Date?
        var id: UUID?
        var list: [Int?]?
        var nested: [String: [String]]?
    }

    @Test func valuesAndEscapes() throws {
        let decoded = try #require(
            try both(
                Fields.self,
                #"""
                 { "text" : "a\"b\\c\/d\n\t\u00e9\ud83d\ude00 한글", "count": -42, "big": -9223372036854775808, "small": 255,
                   "ratio": 1.5e3, "flag": false, "when": "2026-11-29T10:00:00.123Z", "id": "6F9619FF-8B86-D011-B42D-00C04FC964FF",
                   "list": [1, null, 3], "nested": {"k": ["v", ""], "": []} }
                """#))
        #expect(decoded.text == "a\"b\\c/d\n\té😀 한글")
        #expect(decoded.big == Int64.min)
        #expect(decoded.ratio == 1500)
        #expect(decoded.list == [1, nil, 3])
        #expect(decoded.nested?[""] == [])
        #expect(Timestamp.format(try #require(decoded.when)) == "2026-11-29T10:00:00.123Z")
        // Optional members missing or null are nil.
        let sparse = try #require(try both(Fields.self, #"{"text":"","count":0,"big":null}"#))
        #expect(sparse.big == nil && sparse.id == nil)
        // A repeated name: the first value (as Foundation).
        #expect(try both(Fields.self, #"{"text":"a","count":1,"count":2}"#)?.count == 1)
        // Whole numbers written with a fraction or an exponent decode as integers.
        try both(Fields.self, #"{"text":"a","count":2.0}"#)
        try both(Fields.self, #"{"text":"a","count":1e2}"#)
    }

    @Test func refusedAsFoundationRefuses() throws {
        let refused = [
            #"{"count":1}"#,  // a required key missing
            #"{"text":null,"count":1}"#,  // null for a required value
            #"{"text":1,"count":1}"#,  // a number for a string
            #"{"text":"a","count":"1"}"#,  // a string for a number
            #"{"text":"a","count":1.5}"#,  // a fraction for an integer
            #"{"text":"a","count":99999999999999999999}"#,  // too large
            #"{"text":"a","count":1,"small":256}"#,  // too large for UInt8
            #"{"text":"a","count":1,"small":-1}"#,
            #"{"text":"a","count":1,"when":"yesterday"}"#,
            #"{"text":"a","count":1,"id":"not-a-uuid"}"#,
            #"{"text":"a","count":1,"list":{}}"#,
            #"["text"]"#,
        ]
        for json in refused {
            #expect(try both(Fields.self, json) == nil, "\(json)")
            #expect(throws: DecodingError.self, "\(json)") { try EventJSONDecoder().decode(Fields.self, from: Array(json.utf8)) }
        }
    }

    @Test func malformedJSONIsAnErrorNeverACrash() throws {
        let malformed = [
            "", " ", "{", "}", "[", "[1,]", "[,1]", #"{"a":}"#, #"{"a" 1}"#, #"{"a":1,}"#, #"{a:1}"#, "01", "1.", "-", "-a", "1e", "+1",
            #""\x""#, "\"a\u{01}b\"", #""\u12""#, #""\ud800""#, #""\udc00x""#, "tru", "nul", "falsey", "{}x", "[1] [2]", "\"unterminated",
            String(repeating: "[", count: 100_000), String(repeating: "{\"a\":", count: 100_000),
        ]
        for json in malformed {
            #expect(throws: DecodingError.self, "\(json.prefix(40))") { try EventJSONDecoder().decode([String].self, from: Array(json.utf8)) }
            #expect(throws: DecodingError.self, "\(json.prefix(40))") { try EventJSONDecoder().decode(Fields.self, from: Array(json.utf8)) }
        }
        // Bytes that are not UTF-8 inside a string.
        let invalid: [UInt8] = Array(#"{"text":""#.utf8) + [0xFF, 0xFE] + Array(#"","count":1}"#.utf8)
        #expect(throws: DecodingError.self) { try EventJSONDecoder().decode(Fields.self, from: invalid) }
        #expect(throws: DecodingError.self) { try EventCoding.decoder().decode(Fields.self, from: Data(invalid)) }
    }

    @Test func errorsNameTheirPath() throws {
        let json = #"{"text":"a","count":1,"nested":{"k":["v",7]}}"#
        do {
            _ = try EventJSONDecoder().decode(Fields.self, from: Array(json.utf8))
            Issue.record("decoded a number as a string")
        } catch DecodingError.typeMismatch(_, let context) {
            #expect(context.codingPath.map(\.stringValue) == ["nested", "k", "Index 1"])
        }
        do {
            _ = try EventJSONDecoder().decode(Fields.self, from: Array(#"{"text":"a"}"#.utf8))
            Issue.record("decoded without a required key")
        } catch DecodingError.keyNotFound(let key, _) {
            #expect(key.stringValue == "count")
        }
    }
}
