import Synchronization

/// A reference to a `Mutex`-protected value, for state shared by closures and tasks
/// (a `Mutex` itself cannot be captured: it is non-copyable).
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    public init(_ value: Value) { mutex = Mutex(value) }

    public func withLock<R: Sendable>(_ body: (inout Value) throws -> R) rethrows -> R {
        try mutex.withLock { try body(&$0) }
    }

    public var value: Value { mutex.withLock { $0 } }
}
