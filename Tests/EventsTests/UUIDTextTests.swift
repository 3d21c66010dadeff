import Events
import Foundation
import Testing

@Suite("UUIDs as text")
struct UUIDTextTests {
    @Test func parsesWhatFoundationParsesAndWritesLowerCase() throws {
        for _ in 0..<1_000 {
            let id = UUID()
            #expect(UUID(parsing: id.uuidString) == id)
            #expect(UUID(parsing: id.uuidString.lowercased()) == id)
            #expect(UUID(parsing: id.uuidString[...]) == id)
            #expect(id.lowercased == id.uuidString.lowercased())
        }
        let mixed = "6f9619FF-8b86-D011-b42d-00C04fc964ff"
        #expect(UUID(parsing: mixed) == UUID(uuidString: mixed))
        #expect(UUID(parsing: "00000000-0000-0000-0000-000000000000")?.lowercased == "00000000-0000-0000-0000-000000000000")
    }

    @Test func refusesAnythingElse() {
        let refused = [
            "", "6f9619ff-8b86-d011-b42d-00c04fc964f", "6f9619ff-8b86-d011-b42d-00c04fc964fff", "6f9619ff8b86-d011-b42d-00c04fc964ff0",
            "6f9619ff-8b86-d011-b42d_00c04fc964ff", "6f9619fg-8b86-d011-b42d-00c04fc964ff", " 6f9619ff-8b86-d011-b42d-00c04fc964f",
            "{6f9619ff-8b86-d011-b42d-00c04fc964ff}", "6f9619ff-8b86-d011-b42d-00c04fc964f\u{e9}", "not-a-uuid",
        ]
        for text in refused { #expect(UUID(parsing: text) == nil, "\(text)") }
    }
}
