import SuiteTesting
import Testing

/// The whole-path harness itself: a failing test must fail, not hang the run.
@Suite("Test harness")
struct StackHarnessTests {
    struct Failure: Error {}

    @Test("an error thrown inside Stack.run stops the stack and reaches the test (it used to hang the run)")
    func errorPropagates() async throws {
        await #expect(throws: Failure.self) {
            try await Stack.run { s in
                _ = try await s.user()
                throw Failure()
            }
        }
    }
}
