/// One account's bound sessions by resource, for `SessionRegistry`: a dictionary's interface
/// over a lone session stored as it is, since almost every account online has one. Its own
/// dictionary per account (capacity two) was 120 bytes of every idle session.
struct ResourceSessions: Sendable {
    private enum Storage: Sendable {
        case empty
        /// Bound at its own JID's resource.
        case one(SessionHandle)
        case many([String: SessionHandle])
    }

    private var storage = Storage.empty

    init() {}

    var isEmpty: Bool {
        if case .empty = storage { return true }
        return false
    }

    var count: Int {
        switch storage {
        case .empty: 0
        case .one: 1
        case .many(let sessions): sessions.count
        }
    }

    var values: [SessionHandle] {
        switch storage {
        case .empty: []
        case .one(let session): [session]
        case .many(let sessions): Array(sessions.values)
        }
    }

    subscript(resource: String) -> SessionHandle? {
        get {
            switch storage {
            case .empty: nil
            case .one(let session): session.jid.resourcepart == resource ? session : nil
            case .many(let sessions): sessions[resource]
            }
        }
        set {
            var all: [String: SessionHandle]
            switch storage {
            case .empty:
                all = [:]
            case .one(let session):
                all = [session.jid.resourcepart ?? "": session]
            case .many(let sessions):
                all = sessions
                storage = .empty  // so the dictionary below is changed in place
            }
            all[resource] = newValue
            if all.isEmpty {
                storage = .empty
            } else if all.count == 1, let (key, session) = all.first, session.jid.resourcepart == key {
                storage = .one(session)
            } else {
                storage = .many(all)
            }
        }
    }
}
