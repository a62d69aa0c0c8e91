/// Exponential backoff with jitter for reconnecting: attempt 1 waits about `initialDelay`,
/// each later attempt `multiplier` times longer, capped at `maximumDelay`, and each delay is
/// shortened by a random fraction up to `jitter` so that many clients dropped at once (a
/// server restart) spread their returns.
enum ReconnectBackoff {
    static func delay(
        attempt: Int, policy: ClientConfiguration.Reconnect,
        random: (ClosedRange<Double>) -> Double = { Double.random(in: $0) }
    ) -> Duration {
        let initial = seconds(policy.initialDelay)
        let maximum = seconds(policy.maximumDelay)
        let exponent = Double(max(0, attempt - 1))
        let base = min(maximum, initial * pow(policy.multiplier, exponent))
        let jitter = min(max(policy.jitter, 0), 1)
        let factor = 1 - random(0...jitter)
        return .milliseconds(Int64(base * factor * 1000))
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (whole, fraction) = duration.components
        return Double(whole) + Double(fraction) / 1e18
    }
}

import Foundation
