import Dispatch

/// Runs a blocking librdkafka call on a Dispatch thread so the cooperative pool never waits on it.
func runBlocking<T: Sendable>(on queue: DispatchQueue = .global(), _ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        queue.async {
            continuation.resume(with: Result { try body() })
        }
    }
}

extension String {
    /// A C error buffer filled by librdkafka (NUL-terminated within the array).
    init(errorBuffer buffer: [CChar]) {
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        self = String(decoding: bytes, as: UTF8.self)
    }
}

extension Duration {
    /// Whole milliseconds, clamped to librdkafka's `int` timeouts (never negative).
    var librdkafkaMilliseconds: Int32 {
        Int32(clamping: max(components.seconds * 1_000 + components.attoseconds / 1_000_000_000_000_000, 0))
    }
}
