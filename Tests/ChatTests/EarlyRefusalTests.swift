import Foundation
import HTTPTypes
import SuiteTesting
import Testing

/// A service may refuse a request before reading its body (a malformed id in the path). Through
/// the gateway's proxy this used to race the upload: about one small JSON request in ten lost its
/// response ("stream ended at an unexpected time").
@Suite("Refusals before the body is read")
struct EarlyRefusalTests {
    @Test("150 small and 10 large bodies refused before they are read: every response arrives whole")
    func earlyRefusals() async throws {
        try await Stack.run(services: [.auth, .workspace, .chat]) { s in
            let owner = try await s.user()
            let place = try await MessageChangeTests.channel(s, owner, [])
            let large = String(repeating: "x", count: 300_000)
            for (count, content) in [(150, "x"), (10, large)] {
                for _ in 0..<count {
                    let response = try await s.send(.put, place.chat("not-an-id"), owner, json: #"{"content":"\#(content)"}"#)
                    #expect(outcome(response) == "400 E13")
                }
            }
        }
    }
}
