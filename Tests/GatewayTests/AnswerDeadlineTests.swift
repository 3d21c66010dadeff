import Common
import SuiteTesting
import Testing

@Suite("Answer deadline (test client)")
struct AnswerDeadlineTests {
    struct Refused: Error {}

    @Test("an answer in time is returned, an error rethrown; no answer is a TimeoutError at the deadline, not a hang")
    func deadline() async throws {
        #expect(try await withAnswerDeadline(.seconds(5), "quick") { 42 } == 42)
        await #expect(throws: Refused.self) { try await withAnswerDeadline(.seconds(5), "refused") { () async throws -> Int in throw Refused() } }
        let start = ContinuousClock.now
        // An operation that ignores cancellation and would take an hour: the call returns anyway.
        await #expect(throws: TimeoutError.self) {
            try await withAnswerDeadline(.milliseconds(200), "GET /stuck") { () async throws -> Int in
                try? await Task.sleep(for: .seconds(3600))
                return 0
            }
        }
        #expect(ContinuousClock.now - start < .seconds(30))
    }
}
