import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Every BOSH session by sid, and how many are live (`bosh.max_sessions`).
///
/// A session that ended stays findable for a while (its inactivity period), so that a
/// client's next request learns why it ended instead of getting `item-not-found`; it no
/// longer counts against the limit.
final class BOSHSessions: Sendable {
    struct Entry: Sendable {
        let eventLoop: any EventLoop
        let session: NIOLoopBound<BOSHSession>
    }

    private let state = NIOLockedValueBox<(entries: [String: Entry], live: Int)>(([:], 0))
    let maxSessions: Int
    let logger: Logger

    init(maxSessions: Int, logger: Logger) {
        self.maxSessions = maxSessions
        self.logger = logger
    }

    /// Takes one of the `maxSessions` places, or says there is none.
    func reserve() -> Bool {
        state.withLockedValue { state in
            guard state.live < maxSessions else { return false }
            state.live += 1
            return true
        }
    }

    /// Gives back a place reserved for a session that was never made.
    func release() {
        state.withLockedValue { $0.live -= 1 }
    }

    func insert(_ sid: String, _ entry: Entry) {
        state.withLockedValue { $0.entries[sid] = entry }
    }

    func lookup(_ sid: String) -> Entry? {
        state.withLockedValue { $0.entries[sid] }
    }

    var liveCount: Int { state.withLockedValue { $0.live } }

    /// The session is over: its place is free now, its entry goes after `keepFor`.
    func ended(_ sid: String, eventLoop: any EventLoop, keepFor: TimeAmount) {
        state.withLockedValue { $0.live -= 1 }
        eventLoop.scheduleTask(in: keepFor) { [self] in
            state.withLockedValue { _ = $0.entries.removeValue(forKey: sid) }
        }
    }
}
