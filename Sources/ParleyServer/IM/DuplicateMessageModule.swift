import Logging
import NIOConcurrencyHelpers
import ParleyCore
import ParleyStorage

/// Routes a message at most once per (sender, recipient, origin-id) (XEP-0359). A client
/// whose resumption failed resends what the server never acknowledged (XEP-0198 §4), and some
/// of that was routed already: a resend whose origin-id the sender already used towards the
/// same bare JID is dropped (no delivery, archive row, offline copy or carbon), though it
/// still counts as handled.
///
/// Each account's memory is made when it first sends a message with an origin-id (its stream
/// waits for that one archive read), primed from the newest messages it sent in its archive
/// (so resends are recognised after a restart too) — not at login, which stays as cheap as
/// it was for the many sessions that only sit there — and
/// dropped once the account has had no session for `idleLifetime`: memory follows the
/// accounts in use, at most `remembered` pairs (about 6 KB) each. Resends are what a client
/// sent since its last acknowledgement, which it asks for after every burst, so a few hundred
/// cover them; more would cost each online account more than its whole session does.
/// Without an archive it lives in memory only.
public final class DuplicateMessageModule: ServerModule, Sendable {
    static let remembered = 256
    static let idleLifetime: Duration = .seconds(600)
    static let sweepInterval: Duration = .seconds(60)

    private struct Account {
        var sent = RecentOriginIDs(capacity: DuplicateMessageModule.remembered)
        /// Reading the archive; messages seen meanwhile are kept and merged in after.
        var priming: Task<Void, Never>?
        /// When its last session ended; nil while it has one.
        var idleSince: ContinuousClock.Instant?
    }

    private struct State {
        var accounts: [String: Account] = [:]
        var lastSweep = ContinuousClock.now
    }

    private let domain: JID
    private let archive: (any ArchiveStore)?
    private let sessions: SessionRegistry
    private let metrics: ServerMetrics
    private let logger: Logger
    private let state = NIOLockedValueBox(State())

    /// `archive` is nil when archiving is off: then only what was routed since start counts.
    public init(
        domain: JID, archive: (any ArchiveStore)?, sessions: SessionRegistry, events: ServerEventBus, metrics: ServerMetrics,
        logger: Logger
    ) {
        self.domain = domain
        self.archive = archive
        self.sessions = sessions
        self.metrics = metrics
        self.logger = logger
        events.subscribe { [weak self] event in
            switch event {
            case .sessionEnded(let handle): self?.sessionEnded(handle)
            case .accountRemoved(let username): self?.forget(username)
            default: break
            }
        }
    }

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        try registry.filterMessages { [self] message, sender, recipient in
            admit(message, from: sender, to: recipient)
        }
        try registry.prepareMessages { [self] message, username in
            prepare(message, of: username)
        }
    }

    /// How many pairs the account's memory holds (for tests and diagnostics).
    func rememberedCount(of username: String) -> Int? {
        state.withLockedValue { $0.accounts[username]?.sent.count }
    }

    // MARK: Routing

    private func admit(_ message: XMLElement, from sender: SessionHandle, to recipient: JID) -> Bool {
        guard message.type != "error", recipient.localpart != nil, let user = sender.jid.localpart,
            let originID = message.firstChild("origin-id", namespace: XMLNamespace.stanzaID)?[attribute: "id"], !originID.isEmpty
        else { return true }
        let bare = recipient.bare.description
        let key = RecentOriginIDs.key(recipient: bare, originID: originID)
        let fresh = state.withLockedValue { $0.accounts[user, default: Account()].sent.insert(key) }
        if !fresh {
            metrics.duplicateMessages.increment()
            logger.debug(
                "duplicate message not routed again",
                metadata: ["from": "\(sender.jid)", "to": "\(bare)", "origin_id": "\(originID)", "id": "\(message.id ?? "")"])
        }
        return fresh
    }

    // MARK: Lifetime

    /// Before a message with an origin-id is routed: the account's memory exists, primed from
    /// the archive if it was just made. Returns the priming to wait for, if it is not done.
    private func prepare(_ message: XMLElement, of username: String) -> Task<Void, Never>? {
        guard message.firstChild("origin-id", namespace: XMLNamespace.stanzaID) != nil else { return nil }
        return state.withLockedValue { state in
            sweepIfDue(&state)
            if state.accounts[username] != nil {
                state.accounts[username]!.idleSince = nil
                return state.accounts[username]!.priming
            }
            var account = Account()
            if let archive {
                let bare = (try? JID(localpart: username, domainpart: domain.domainpart))?.description ?? ""
                account.priming = Task { [self] in await prime(username, bare: bare, from: archive) }
            }
            state.accounts[username] = account
            return account.priming
        }
    }

    private func prime(_ username: String, bare: String, from archive: any ArchiveStore) async {
        var sent: [SentOriginID] = []
        do {
            sent = try await archive.recentOriginIDs(of: username, sentAs: bare, limit: Self.remembered)
        } catch {
            // The login goes on; only resends of messages from before this start slip through.
            logger.error("cannot read recent origin-ids", metadata: ["user": "\(username)", "error": "\(error)"])
        }
        var primed = RecentOriginIDs(capacity: Self.remembered)
        for item in sent.reversed() {
            _ = primed.insert(RecentOriginIDs.key(recipient: item.to, originID: item.originID))
        }
        state.withLockedValue { state in
            guard var account = state.accounts[username] else { return }
            for key in account.sent.keys { _ = primed.insert(key) }
            account.sent = primed
            account.priming = nil
            state.accounts[username] = account
        }
    }

    private func sessionEnded(_ handle: SessionHandle) {
        guard let username = handle.jid.localpart, sessions.sessions(of: handle.jid.bare).isEmpty else { return }
        state.withLockedValue { state in
            if state.accounts[username] != nil { state.accounts[username]!.idleSince = .now }
            sweepIfDue(&state)
        }
    }

    private func forget(_ username: String) {
        _ = state.withLockedValue { $0.accounts.removeValue(forKey: username) }
    }

    /// Drops the memories of accounts idle for `idleLifetime`, once a `sweepInterval` at most.
    private func sweepIfDue(_ state: inout State) {
        let now = ContinuousClock.now
        guard now - state.lastSweep >= Self.sweepInterval else { return }
        state.lastSweep = now
        for (username, account) in state.accounts {
            guard let idleSince = account.idleSince, now - idleSince >= Self.idleLifetime, account.priming == nil else { continue }
            // A session that bound just as the last one ended keeps the memory.
            if let jid = try? JID(localpart: username, domainpart: domain.domainpart), !sessions.sessions(of: jid).isEmpty {
                state.accounts[username]!.idleSince = nil
            } else {
                state.accounts[username] = nil
            }
        }
    }
}
