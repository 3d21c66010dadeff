import Synchronization

/// Spreads connections' periodic beats (Engine.IO pings, STOMP server heart-beats) over their period, so connections that
/// opened together do not beat together for as long as they stay open.
///
/// Clients open together after a gateway restart (every client reconnects within seconds) and in
/// a load test's ramp. With every first ping one full interval after the open, 5 000 sockets
/// opened within 4 s got their pings in the same few heartbeat ticks every 25 s: each tick a burst
/// of over a thousand pings out and pongs back, and the deliveries queued behind those bursts were
/// most of a run's latency tail (docs/benchmarks.md, part 30). Now each new connection's first
/// beat comes early by a share of the period, so it falls anywhere within the first period. The
/// shares follow the golden-ratio sequence (`n × 0.618…` modulo 1), which covers the range evenly
/// for any run of consecutive connections, however few, with no random source. Later beats keep
/// the phase: one period apart. A first beat sooner than the period is within both protocols: an
/// Engine.IO client only needs a ping within `pingInterval + pingTimeout`, and STOMP's negotiated
/// interval is the longest a side may stay silent.
final class HeartbeatPhases: Sendable {
    private let opened = Atomic<UInt64>(0)

    /// How much earlier than a full `period` the next connection's first beat is due: within
    /// [0, period).
    func nextAdvance(period: Duration) -> Duration {
        let n = opened.wrappingAdd(1, ordering: .relaxed).oldValue
        return period * Self.share(n)
    }

    /// The `n`th member of the golden-ratio sequence, in [0, 1): `n × 2⁶⁴ / φ` modulo 2⁶⁴
    /// (the multiplier is 2⁶⁴ / φ, rounded to odd), scaled down.
    static func share(_ n: UInt64) -> Double {
        Double((n &* 0x9E37_79B9_7F4A_7C15) >> 11) / Double(1 << 53)
    }
}
