import Hummingbird
import NIOCore
import Synchronization

/// A client's request body as the proxy's upstream upload reads it: bounded in bytes, and
/// released before the proxy returns.
///
/// AsyncHTTPClient reads a streamed upload in a task of its own. When the service answers before
/// it has read the whole body (an early refusal), that task is still waiting for the next chunk
/// when the answer goes back to the client, and Hummingbird then reads the rest of the body off the
/// same connection to reach the next request: two concurrent reads of one NIO async sequence,
/// which is a fatal error (`only allow a single Iterator`). `release()` waits out a read in
/// progress and ends the upload for every later read, so once it returns the connection has
/// exactly one reader again.
///
/// It also counts bytes against `limit`: a chunked body has no length to check up front.
struct UploadBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    /// The body went over the limit while streaming.
    struct TooLarge: Error {}

    let base: RequestBody
    let gate: Gate

    init(_ base: RequestBody, limit: Int) {
        self.base = base
        self.gate = Gate(limit: limit)
    }

    /// Ends the upload's access to the client's body (see the type's comment).
    func release() async { await gate.release() }

    /// Whether reading stopped because the body went over the limit.
    var exceededLimit: Bool { gate.exceeded }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator(), gate: gate) }

    /// Used by the one upload task that made it.
    struct AsyncIterator: AsyncIteratorProtocol {
        var base: RequestBody.AsyncIterator
        let gate: Gate

        mutating func next() async throws -> ByteBuffer? {
            guard gate.beginRead() else { return nil }
            let chunk: ByteBuffer?
            do {
                chunk = try await base.next()
            } catch {
                _ = gate.endRead(bytes: 0)
                throw error
            }
            guard gate.endRead(bytes: chunk?.readableBytes ?? 0) else { throw TooLarge() }
            return chunk
        }
    }

    /// Who reads the body now: state shared by the upload task and the proxy, behind a lock.
    final class Gate: Sendable {
        private enum Phase {
            case idle
            case reading
            /// A read is in progress and `release()` waits for it.
            case releasing(CheckedContinuation<Void, Never>)
            case released
        }

        private struct State {
            var phase: Phase = .idle
            var bytes = 0
            var exceeded = false
        }

        let limit: Int
        private let state = Mutex(State())

        init(limit: Int) { self.limit = limit }

        var exceeded: Bool { state.withLock { $0.exceeded } }

        /// False once the body is released or over its limit: the upload sees the end.
        func beginRead() -> Bool {
            state.withLock { state in
                guard case .idle = state.phase, !state.exceeded else { return false }
                state.phase = .reading
                return true
            }
        }

        /// Records a finished read; false when it took the body over the limit.
        func endRead(bytes: Int) -> Bool {
            let (waiter, withinLimit) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Bool) in
                state.bytes += bytes
                if state.bytes > limit { state.exceeded = true }
                var waiter: CheckedContinuation<Void, Never>?
                switch state.phase {
                case .releasing(let continuation):
                    waiter = continuation
                    state.phase = .released
                case .reading:
                    state.phase = .idle
                case .idle, .released:
                    break
                }
                return (waiter, !state.exceeded)
            }
            waiter?.resume()
            return withinLimit
        }

        func release() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waits = state.withLock { state -> Bool in
                    if case .reading = state.phase {
                        state.phase = .releasing(continuation)
                        return true
                    }
                    state.phase = .released
                    return false
                }
                if !waits { continuation.resume() }
            }
        }
    }
}
