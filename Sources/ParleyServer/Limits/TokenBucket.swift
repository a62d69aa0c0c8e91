import NIOCore

/// A token bucket for stanza shaping: `rate` stanzas a second on average, bursts up to
/// `burst`. When it runs dry the session stops reading from the socket until it refills,
/// so TCP pushes back on the sender and nothing is dropped.
struct TokenBucket {
    let rate: Double
    let burst: Double
    private var tokens: Double
    private var updated: NIODeadline

    init(rate: Double, burst: Double, now: NIODeadline = .now()) {
        self.rate = rate
        self.burst = max(burst, 1)
        self.tokens = max(burst, 1)
        self.updated = now
    }

    /// Takes one token; returns how long to pause reading, or nil to go on.
    mutating func take(now: NIODeadline = .now()) -> TimeAmount? {
        let elapsed = Double((now - updated).nanoseconds) / 1e9
        tokens = min(burst, tokens + elapsed * rate)
        updated = now
        tokens -= 1
        guard tokens < 0 else { return nil }
        return .nanoseconds(Int64((-tokens / rate) * 1e9) + 1)
    }
}
