import Common
import Testing

@Suite("Startup gate: waiting on the latch")
struct StartupGateTests {
    @Test func waitersReturnWhenTheLatchOpens() async throws {
        let latch = Latch()
        let waiter = Task { try await latch.waitUnlessCancelled() }
        latch.open()
        try await waiter.value
        try await latch.waitUnlessCancelled()  // already open: returns at once
    }

    @Test func aCancelledWaiterGivesUpWithoutTheLatchOpening() async {
        let latch = Latch()
        let waiter = Task { try await latch.waitUnlessCancelled() }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(!latch.isOpen)
        let alreadyCancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await latch.waitUnlessCancelled()
        }
        await #expect(throws: CancellationError.self) { try await alreadyCancelled.value }
    }
}
