import Logging
import ParleyCore
import ParleyStorage

/// Ends the sessions of accounts that were removed, or whose password an administrator
/// changed, including by `parleyd deluser`/`passwd` run from another process on the same
/// database: the change feed is the only channel between the two.
struct AccountChangeWatcher: Sendable {
    let feed: any AccountChangeFeed
    let sessions: SessionRegistry
    let domain: JID
    let logger: Logger
    let interval: Duration
    /// Told of every deletion (`accountRemoved`), for modules that keep per-account state.
    var events: ServerEventBus? = nil

    func run() async {
        var last: Int64
        do {
            last = try await feed.latestChangeID()
        } catch {
            logger.error("cannot read the account change feed; removed accounts stay online until they disconnect", metadata: ["error": "\(error)"])
            return
        }
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            if let newest = try? await poll(after: last) { last = newest }
        }
    }

    /// Applies every change recorded after `cursor`; returns the id of the last one seen.
    func poll(after cursor: Int64) async throws -> Int64 {
        var last = cursor
        for change in try await feed.changes(after: cursor) {
            last = max(last, change.id)
            apply(change)
        }
        return last
    }

    private func apply(_ change: AccountChange) {
        guard let bare = try? JID(localpart: change.username, domainpart: domain.domainpart) else { return }
        let error: StreamError
        switch change.kind {
        case .deleted:
            error = StreamError(.notAuthorized, text: "Your account was removed.")
        case .passwordChanged where change.origin == .admin:
            error = StreamError(.notAuthorized, text: "Your password was changed by an administrator; sign in again.")
        case .passwordChanged:
            return
        }
        // The username may already name a new account (deleted and re-created before this
        // poll): only sessions of the account the change names end. A change without an id
        // (recorded before ids were kept) or a session without one ends as before.
        let online = sessions.sessions(of: bare).filter { session in
            guard let changed = change.accountID, let own = session.accountID else { return true }
            return changed == own
        }
        if !online.isEmpty {
            logger.info("ending sessions after account change", metadata: ["jid": "\(bare)", "change": "\(change.kind.rawValue)"])
        }
        for session in online { session.terminate(error) }
        if change.kind == .deleted { events?.publish(.accountRemoved(username: change.username)) }
    }
}
