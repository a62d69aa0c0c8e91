import Foundation
import Logging
import NIOConcurrencyHelpers
import ParleyCore
import ParleyStorage

/// XEP-0012 last activity, answered by the server: for an account, how long ago its last
/// session ended and the status of its last unavailable presence (kept in storage, so a
/// restart does not forget it); for the server, its uptime. A full JID's idle time is its
/// client's to answer, and the router forwards such queries.
public final class LastActivityModule: ServerModule {
    public static let namespace = "jabber:iq:last"

    let store: any LastActivityStore
    let rosters: any RosterStore
    let sessions: SessionRegistry
    let logger: Logger
    private let started = ContinuousClock.now
    /// Logouts of one account are written in the order they happened.
    private let queue = UserQueue()
    /// Logouts not yet written, so that shutdown can wait for those of the sessions it ends.
    private let unwritten = NIOLockedValueBox(0)

    public init(store: any LastActivityStore, rosters: any RosterStore, sessions: SessionRegistry, events: ServerEventBus, logger: Logger) {
        self.store = store
        self.rosters = rosters
        self.sessions = sessions
        self.logger = logger
        events.subscribe { [weak self] event in
            guard let self, case .sessionEnded(let session) = event else { return }
            self.sessionEnded(session)
        }
    }

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        try registry.handle(.get, "query", namespace: Self.namespace, for: .server) { [started] _, responder in
            let uptime = ContinuousClock.now - started
            responder.result(XMLElement("query", namespace: Self.namespace, ["seconds": "\(uptime.components.seconds)"]))
        }
        try registry.handle(.get, "query", namespace: Self.namespace, for: .account) { [self] request, responder in
            answer(request, responder)
        }
    }

    // MARK: Recording

    /// The bus publishes after the session left the registry, so "no session left" means
    /// this was the account's last one: its logout is the account's.
    private func sessionEnded(_ session: SessionHandle) {
        let account = session.jid.bare
        guard sessions.sessions(of: account).isEmpty, let username = account.localpart else { return }
        let activity = LastActivity(loggedOutAt: Date(), status: session.withPresence { $0.unavailableStatus })
        unwritten.withLockedValue { $0 += 1 }
        queue.enqueue(username) { [store, logger, unwritten] in
            defer { unwritten.withLockedValue { $0 -= 1 } }
            do {
                try await store.setLastActivity(activity, for: username)
            } catch StorageError.accountNotFound {
                // The session ended because its account was deleted: nothing to remember.
            } catch {
                logger.error("cannot record the last logout", metadata: ["user": "\(username)", "error": "\(error)"])
            }
        }
    }

    /// Returns once every logout so far is written, or at `deadline`.
    func waitUntilIdle(deadline: ContinuousClock.Instant) async {
        while unwritten.withLockedValue({ $0 > 0 }), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    // MARK: Answering

    private func answer(_ request: IQRequest, _ responder: IQResponder) {
        guard let username = request.to.localpart else { return responder.error(StanzaError(.itemNotFound)) }
        let contact = request.to.bare
        let requester = request.from.bare
        let own = request.isToOwnAccount
        responder.answer { [self] in
            // §3: only those allowed to see the contact's presence (a 'from' or 'both'
            // subscription in the contact's roster) learn when it was last online; to anyone
            // else, an account that does not exist looks the same.
            if !own {
                let items = try await rosters.roster(of: username).items
                let entitled = items.contains {
                    $0.contact == requester.description && ($0.subscription == .from || $0.subscription == .both)
                }
                guard entitled else {
                    throw StanzaError(.forbidden, text: "Only those subscribed to \(contact)'s presence may see its last activity.")
                }
            }
            // §3: online now, so the last activity is now.
            if sessions.sessions(of: contact).contains(where: \.isAvailable) {
                return XMLElement("query", namespace: Self.namespace, ["seconds": "0"])
            }
            guard let last = try await store.lastActivity(of: username) else {
                throw StanzaError(.itemNotFound, text: "\(contact) has not logged out since this server began recording it.")
            }
            let seconds = max(0, Int(Date().timeIntervalSince(last.loggedOutAt)))
            return XMLElement("query", namespace: Self.namespace, ["seconds": "\(seconds)"], text: last.status ?? "")
        }
    }
}
