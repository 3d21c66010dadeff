import Events
import Foundation
import Testing

@Suite("Timestamps in the contract's format")
struct TimestampTests {
    @Test func formatsWithExactlyThreeFractionalDigitsAndZ() {
        #expect(Timestamp.format(milliseconds: 0) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp.format(milliseconds: 1_732_240_800_123) == "2024-11-22T02:00:00.123Z")
        #expect(Timestamp.format(milliseconds: 951_782_400_007) == "2000-02-29T00:00:00.007Z")  // leap day
        #expect(Timestamp.format(milliseconds: -1) == "1969-12-31T23:59:59.999Z")
    }

    @Test func truncatesBelowTheMillisecond() {
        let date = Date(timeIntervalSince1970: 1.23456789)
        #expect(Timestamp.format(date) == "1970-01-01T00:00:01.234Z")
        #expect(Timestamp.milliseconds(Timestamp.truncated(date)) == 1234)
    }

    @Test(arguments: [
        ("2024-11-22T02:00:00.123Z", Int64(1_732_240_800_123)),
        ("2024-11-22T02:00:00Z", 1_732_240_800_000),
        ("2024-11-22T02:00:00.1Z", 1_732_240_800_100),
        ("2024-11-22T02:00:00.123456Z", 1_732_240_800_123),
        ("2024-11-22T11:00:00.123+09:00", 1_732_240_800_123),
        ("2024-11-21T21:30:00.000-04:30", 1_732_240_800_000),
    ])
    func parsesRFC3339(text: String, expected: Int64) {
        #expect(Timestamp.parseMilliseconds(text) == expected)
    }

    @Test(arguments: [
        "", "2024-11-22", "2024-11-22T02:00:00", "2024-13-01T00:00:00Z", "2024-11-22T02:00:00.Z",
        "2024-11-22T02:00:00.123Zjunk", "yesterday", "2024-11-22T25:00:00Z", "2024-11-22T02:00:00.1234567890Z",
    ])
    func rejectsAnythingElse(text: String) {
        #expect(Timestamp.parse(text) == nil)
    }

    @Test func roundTripsThroughFormatAndParse() {
        for _ in 0..<1_000 {
            let ms = Int64.random(in: 0..<4_102_444_800_000)
            #expect(Timestamp.parseMilliseconds(Timestamp.format(milliseconds: ms)) == ms)
        }
    }
}

@Suite("UUIDv7")
struct UUIDv7Tests {
    @Test func hasVersionSevenAndTheRFCVariant() {
        let id = UUIDv7.generate()
        let bytes = id.uuid
        #expect(bytes.6 >> 4 == 7)
        #expect(bytes.8 >> 6 == 0b10)
    }

    @Test func carriesItsCreationTime() throws {
        let now = Date(timeIntervalSince1970: 1_732_240_800.123)
        let id = UUIDv7.generate(now: now)
        let stamp = try #require(UUIDv7.timestamp(of: id))
        #expect(Timestamp.milliseconds(stamp) >= 1_732_240_800_123)
    }

    @Test func idsMadeInOrderSortInOrder() {
        let ids = (0..<20_000).map { _ in UUIDv7.generate().lowercased }
        #expect(ids == ids.sorted())
        #expect(Set(ids).count == ids.count)
    }
}
