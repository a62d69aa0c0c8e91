import NIOConcurrencyHelpers
import NIOCore

/// Slows down and then stops password guessing from one address: each failure within the
/// window doubles the delay before the next `<failure/>` is sent, and once `maxFailures`
/// is reached every further attempt from that address ends the stream with
/// `policy-violation` until the window has passed.
public final class AuthFailureLimiter: Sendable {
    private struct Record {
        var failures: Int
        var windowStart: NIODeadline
    }

    private let maxFailures: Int
    private let window: TimeAmount
    private let baseDelay: TimeAmount
    private let maxDelay: TimeAmount
    private let records = NIOLockedValueBox([String: Record]())

    public init(
        maxFailures: Int, window: TimeAmount, baseDelay: TimeAmount = .milliseconds(250),
        maxDelay: TimeAmount = .seconds(4)
    ) {
        self.maxFailures = maxFailures
        self.window = window
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// Whether the address may try to authenticate now; if not, how long until it may.
    public func lockout(for address: String, now: NIODeadline = .now()) -> TimeAmount? {
        records.withLockedValue { records in
            guard let record = records[address] else { return nil }
            let windowEnd = record.windowStart + window
            if now >= windowEnd {
                records[address] = nil
                return nil
            }
            return record.failures >= maxFailures ? windowEnd - now : nil
        }
    }

    /// Records a failure and returns how long to wait before answering it.
    public func recordFailure(for address: String, now: NIODeadline = .now()) -> TimeAmount {
        records.withLockedValue { records in
            var record = records[address] ?? Record(failures: 0, windowStart: now)
            if now >= record.windowStart + window { record = Record(failures: 0, windowStart: now) }
            record.failures += 1
            records[address] = record
            let exponent = min(record.failures - 1, 16)
            let delay = TimeAmount.nanoseconds(baseDelay.nanoseconds << exponent)
            return min(delay, maxDelay)
        }
    }

    public func recordSuccess(for address: String) {
        records.withLockedValue { _ = $0.removeValue(forKey: address) }
    }

    /// Drops records whose window has passed, so the table cannot grow without bound.
    public func prune(now: NIODeadline = .now()) {
        records.withLockedValue { records in
            records = records.filter { now < $0.value.windowStart + window }
        }
    }
}
