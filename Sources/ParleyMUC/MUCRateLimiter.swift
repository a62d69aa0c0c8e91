import ParleyCore

/// How fast one occupant may speak in a room: every groupchat message (and voice request)
/// is copied to every occupant, so one client flooding a room costs the server and everyone
/// in it. A token bucket per occupant lets a burst through and then a steady rate.
public struct MUCRateLimit: Sendable, Hashable {
    /// Messages per second an occupant may send in the long run.
    public var messagesPerSecond: Double
    /// Messages an occupant may send at once after being quiet.
    public var burst: Int

    public init(messagesPerSecond: Double = 2, burst: Int = 10) {
        self.messagesPerSecond = messagesPerSecond
        self.burst = burst
    }
}

/// One occupant's bucket. It starts full; the clock is the monotonic one, so a change of the
/// wall clock neither blocks nor frees anyone.
struct MUCTokenBucket: Sendable {
    private var tokens: Double?
    private var refilled: ContinuousClock.Instant?

    /// Takes one token if there is one.
    mutating func take(_ limit: MUCRateLimit, now: ContinuousClock.Instant = .now) -> Bool {
        let capacity = Double(max(1, limit.burst))
        var available = tokens ?? capacity
        if let refilled {
            let elapsed = now - refilled
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            available = min(capacity, available + seconds * limit.messagesPerSecond)
        }
        refilled = now
        guard available >= 1 else {
            tokens = available
            return false
        }
        tokens = available - 1
        return true
    }
}

extension MUCRoom {
    /// Charges one message to the sending occupant's bucket; refuses it when the bucket is
    /// empty. Only that occupant's message is refused: the room goes on for the others.
    mutating func charge(_ session: JID, _ limit: MUCRateLimit) throws(StanzaError) {
        guard let nick = nick(of: session) else { return }
        guard takeSpeechToken(of: nick, limit) else {
            throw StanzaError(
                .policyViolation, type: .wait,
                text: "You are sending messages too fast for this room (at most \(limit.burst) at once, then "
                    + "\(Self.rate(limit.messagesPerSecond)) per second); wait a moment.")
        }
    }

    private static func rate(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}
