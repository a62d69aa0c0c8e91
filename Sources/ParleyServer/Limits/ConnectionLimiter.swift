import NIOConcurrencyHelpers

/// Counts open connections in total and per remote address, and says no past the limits.
/// A refused connection is not dropped silently: the session sends the peer a stream error
/// naming the limit, then closes.
public final class ConnectionLimiter: Sendable {
    public enum Refusal: Sendable, Equatable {
        case tooManyFromAddress(limit: Int)
        case serverFull(limit: Int)
    }

    private struct Counts {
        var total = 0
        var byAddress: [String: Int] = [:]
    }

    private let perAddress: Int
    private let total: Int
    private let counts = NIOLockedValueBox(Counts())

    public init(perAddress: Int, total: Int) {
        self.perAddress = perAddress
        self.total = total
    }

    /// Admits a connection, or says why not. Every admitted connection must be released.
    public func admit(address: String) -> Refusal? {
        counts.withLockedValue { counts in
            if counts.total >= total { return .serverFull(limit: total) }
            let current = counts.byAddress[address, default: 0]
            if current >= perAddress { return .tooManyFromAddress(limit: perAddress) }
            counts.total += 1
            counts.byAddress[address] = current + 1
            return nil
        }
    }

    public func release(address: String) {
        counts.withLockedValue { counts in
            counts.total -= 1
            let remaining = counts.byAddress[address, default: 1] - 1
            counts.byAddress[address] = remaining > 0 ? remaining : nil
        }
    }

    public var openConnections: Int { counts.withLockedValue { $0.total } }
}
