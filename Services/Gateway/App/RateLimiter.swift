import Synchronization

/// Token buckets keyed by user or client address: `rate` requests per second sustained, up to
/// `burst` at once. In memory per gateway replica.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

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
            var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
            let elapsed = now - bucket.updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.tokens = min(burst, bucket.tokens + seconds * rate)
            bucket.updated = now
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                return false
            }
            bucket.tokens -= 1
            buckets[key] = bucket
            return true
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
