import Metrics
import NIOCore
import NIOPosix
import ServiceKit
import Synchronization

/// Bounded admission in front of bcrypt: at most `capacity` hashes waiting or running at once,
/// and none that waited longer than `maxWait` for a thread. Past either bound the request is shed
/// at once with E98 (HTTP 429, `Retry-After`), so a login flood cannot pile up work (and memory,
/// and client time-outs) the CPU will never catch up with; every other route stays fast.
///
/// The hashing itself runs on a fixed pool of one thread per core, never on Swift's cooperative
/// pool (bcrypt blocks a thread for tens of milliseconds by design).
final class HashingAdmission: Sendable {
    let capacity: Int
    let maxWait: Duration
    private let inFlight = Atomic<Int>(0)
    private let shedFull = Counter(label: "auth_bcrypt_shed_total", dimensions: [("reason", "queue_full")])
    private let shedLate = Counter(label: "auth_bcrypt_shed_total", dimensions: [("reason", "waited_too_long")])

    /// One thread per core for every hasher of the process; started once, never shut down.
    private static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: System.coreCount)
        pool.start()
        return pool
    }()

    static var defaultCapacity: Int { 4 * System.coreCount }

    init(capacity: Int, maxWait: Duration) {
        self.capacity = capacity
        self.maxWait = maxWait
    }

    /// Hashes waiting or running right now.
    var current: Int { inFlight.load(ordering: .relaxed) }

    /// Runs `work` on the bcrypt threads, or throws E98 when the service is saturated.
    /// - Parameter sheddable: false for work that must not fail under load (the start-up hash);
    ///   it still runs on the bcrypt threads, but is neither counted nor shed.
    func run<T: Sendable>(sheddable: Bool = true, _ work: @escaping @Sendable () throws -> T) async throws -> T {
        guard sheddable else { return try await Self.pool.runIfActive(work) }
        guard admit() else {
            shedFull.increment()
            throw APIError.overloaded(detail: "bcrypt queue full (\(capacity) waiting or running)")
        }
        defer { inFlight.subtract(1, ordering: .relaxed) }
        let enqueued = ContinuousClock.now
        let maxWait = self.maxWait
        let result: Result<T, any Error>? = try await Self.pool.runIfActive {
            guard ContinuousClock.now - enqueued <= maxWait else { return nil }
            return Result { try work() }
        }
        guard let result else {
            shedLate.increment()
            throw APIError.overloaded(detail: "bcrypt queue wait over \(maxWait)")
        }
        return try result.get()
    }

    private func admit() -> Bool {
        var current = inFlight.load(ordering: .relaxed)
        while current < capacity {
            let (exchanged, original) = inFlight.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }
}
