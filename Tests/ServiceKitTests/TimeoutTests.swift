import Common
import Dispatch
import Foundation
import Testing

@Suite("withTimeout")
struct TimeoutTests {
    /// Waits `seconds` in a way cancellation cannot cut short (as a blocking client call does).
    static func uncancellableWait(_ seconds: Double) async {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { continuation.resume() }
        }
    }

    @Test("a body that ignores cancellation still times out at the deadline, not when it finally ends")
    func uncooperativeBody() async throws {
        let started = ContinuousClock.now
        await #expect(throws: TimeoutError.self) {
            try await withTimeout(.milliseconds(200), "uncooperative") { await Self.uncancellableWait(3) }
        }
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test("a body that finishes in time gives its value or its error; a cancelled caller cancels the body")
    func finishesInTime() async throws {
        #expect(try await withTimeout(.seconds(5)) { 42 } == 42)
        struct Refused: Error {}
        await #expect(throws: Refused.self) { try await withTimeout(.seconds(5)) { throw Refused() } }
        let outer = Task { try await withTimeout(.seconds(30)) { try await Task.sleep(for: .seconds(30)) } }
        outer.cancel()
        await #expect(throws: CancellationError.self) { try await outer.value }
    }
}
