import ParleyCore

/// The recipients of a session's directed presence (RFC 6121 §4.6.3): a set of JIDs that
/// keeps its first member inline. Nearly every session that has any has one, the room it is
/// in; as a `Set<JID>` that one cost a 176-byte block per session, made while the room
/// filled and left among the fill's garbage (bench/README.md, MUC memory, seventh round).
public struct DirectedPresenceRecipients: Sendable, Sequence, Equatable, ExpressibleByArrayLiteral {
    private enum Storage: Sendable {
        case none
        case one(JID)
        /// Two or more.
        case many(Set<JID>)
    }

    private var storage: Storage = .none

    public init() {}

    public init(arrayLiteral elements: JID...) {
        self.init(elements)
    }

    public init<S: Sequence<JID>>(_ recipients: S) {
        for recipient in recipients { insert(recipient) }
    }

    public var isEmpty: Bool {
        if case .none = storage { true } else { false }
    }

    public var count: Int {
        switch storage {
        case .none: 0
        case .one: 1
        case .many(let set): set.count
        }
    }

    public func contains(_ recipient: JID) -> Bool {
        switch storage {
        case .none: false
        case .one(let only): only == recipient
        case .many(let set): set.contains(recipient)
        }
    }

    public mutating func insert(_ recipient: JID) {
        switch storage {
        case .none:
            storage = .one(recipient)
        case .one(let only):
            if only != recipient { storage = .many([only, recipient]) }
        case .many(var set):
            storage = .none  // so the set below is not copied
            set.insert(recipient)
            storage = .many(set)
        }
    }

    public mutating func remove(_ recipient: JID) {
        switch storage {
        case .none:
            return
        case .one(let only):
            if only == recipient { storage = .none }
        case .many(var set):
            storage = .none
            set.remove(recipient)
            storage = set.count == 1 ? .one(set.first!) : .many(set)
        }
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.count == rhs.count && lhs.allSatisfy(rhs.contains)
    }

    public struct Iterator: IteratorProtocol {
        fileprivate var only: JID?
        fileprivate var set: Set<JID>.Iterator?

        public mutating func next() -> JID? {
            if let only {
                self.only = nil
                return only
            }
            return set?.next()
        }
    }

    public func makeIterator() -> Iterator {
        switch storage {
        case .none: Iterator(only: nil, set: nil)
        case .one(let only): Iterator(only: only, set: nil)
        case .many(let set): Iterator(only: nil, set: set.makeIterator())
        }
    }

    public var underestimatedCount: Int { count }
}
