import Testing

@testable import GatewayApp

@Suite("The gateway's token buckets")
struct RateLimiterTests {
    let start = ContinuousClock.now

    @Test("a new key may spend its burst at once, then one token per 1/rate seconds")
    func burstThenRate() {
        let limiter = RateLimiter(rate: 2, burst: 3)
        #expect((0..<3).allSatisfy { _ in limiter.allow("u", now: start) })
        #expect(!limiter.allow("u", now: start))
        #expect(!limiter.allow("u", now: start + .milliseconds(400)))  // 0.8 token
        #expect(limiter.allow("u", now: start + .milliseconds(500)))  // 1 token (refused calls do not cost)
        #expect(!limiter.allow("u", now: start + .milliseconds(500)))
    }

    @Test("refill stops at the burst, however long the key was idle")
    func refillIsCapped() {
        let limiter = RateLimiter(rate: 10, burst: 2)
        #expect(limiter.allow("u", now: start))
        #expect(limiter.allow("u", now: start))
        let later = start + .seconds(3600)
        #expect(limiter.allow("u", now: later))
        #expect(limiter.allow("u", now: later))
        #expect(!limiter.allow("u", now: later))
    }

    @Test("keys are independent")
    func independentKeys() {
        let limiter = RateLimiter(rate: 1, burst: 1)
        #expect(limiter.allow("a", now: start))
        #expect(!limiter.allow("a", now: start))
        #expect(limiter.allow("b", now: start))
    }

    @Test("past maxKeys, buckets that refilled are forgotten; active ones are kept with their debt")
    func eviction() {
        let limiter = RateLimiter(rate: 1, burst: 1, maxKeys: 3)
        #expect(limiter.allow("idle1", now: start))
        #expect(limiter.allow("idle2", now: start))
        let later = start + .seconds(5)
        #expect(limiter.allow("busy", now: later))
        #expect(limiter.keyCount == 3)
        // The fourth key finds three: the two idle ones refilled and are dropped, `busy` stays.
        #expect(limiter.allow("new", now: later))
        #expect(limiter.keyCount == 2)
        #expect(!limiter.allow("busy", now: later))
    }
}
