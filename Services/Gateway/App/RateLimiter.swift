import Synchronization

/// Token buckets keyed by user or client address: `rate` requests per second sustained, up to
/// `burst` at once. In memory per gateway replica.
final class RateLimiter: Sendable {
    private typealias Bucket = TokenBucket

    let rate: Double
    let burst: Double
    private let buckets = Mutex<[String: Bucket]>([:])
    /// Past this many keys, buckets that refilled completely are forgotten.
    private let maxKeys: Int

    init(rate: Double, burst: Double, maxKeys: Int = 200_000) {
        self.rate = rate
        self.burst = burst
        self.maxKeys = maxKeys
    }

    /// Keys currently tracked.
    var keyCount: Int { buckets.withLock { $0.count } }

    /// Takes one token for `key`; false when the bucket is empty.
    func allow(_ key: String, now: ContinuousClock.Instant = .now) -> Bool {
        buckets.withLock { buckets in
            if buckets.count >= maxKeys { Self.evictFull(&buckets, now: now, rate: rate, burst: burst) }
            var bucket = buckets[key] ?? Bucket(burst: burst, now: now)
            let allowed = bucket.take(rate: rate, burst: burst, now: now)
            buckets[key] = bucket
            return allowed
        }
    }

    /// Forgets keys whose bucket has refilled completely (they behave as new keys anyway).
    private static func evictFull(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant, rate: Double, burst: Double) {
        buckets = buckets.filter { _, bucket in
            let elapsed = now - bucket.updated
            let seconds = Double(elapsed.components.seconds)
            return bucket.tokens + seconds * rate < burst
        }
    }
}

/// One token bucket: `rate` tokens a second refill it, up to `burst`; each allowed thing takes one.
struct TokenBucket: Sendable {
    var tokens: Double
    var updated: ContinuousClock.Instant

    /// A full bucket.
    init(burst: Double, now: ContinuousClock.Instant = .now) {
        tokens = burst
        updated = now
    }

    /// Refills for the time since the last call, then takes a token; false when none is left.
    mutating func take(rate: Double, burst: Double, now: ContinuousClock.Instant = .now) -> Bool {
        let elapsed = now - updated
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        tokens = min(burst, tokens + seconds * rate)
        updated = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
