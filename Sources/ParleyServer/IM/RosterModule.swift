import ParleyCore
import ParleyStorage

/// jabber:iq:roster (RFC 6121 §2) with XEP-0237 versioning: the roster, its edits and
/// removals (whose subscription side effects belong to the presence module), and pushes to
/// every resource that asked for the roster.
public final class RosterModule: ServerModule {
    public struct Limits: Sendable {
        public var maxItems = 1000
        public var maxNameBytes = 1023
        public var maxGroups = 64
        public var maxGroupBytes = 1023
        public init() {}
    }

    let rosters: any RosterStore
    let presence: PresenceModule
    let limits: Limits
    let pusher: RosterPusher

    public init(rosters: any RosterStore, presence: PresenceModule, sessions: SessionRegistry, limits: Limits = Limits()) {
        self.rosters = rosters
        self.presence = presence
        self.limits = limits
        self.pusher = RosterPusher(sessions: sessions)
    }

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        registry.advertiseStreamFeature(XMLElement("ver", namespace: RosterXML.versioningFeature))
        try registry.handle(.get, "query", namespace: RosterXML.namespace, for: .account, advertise: false) { [self] request, responder in
            get(request, responder)
        }
        try registry.handle(.set, "query", namespace: RosterXML.namespace, for: .account, advertise: false) { [self] request, responder in
            set(request, responder)
        }
    }

    private func get(_ request: IQRequest, _ responder: IQResponder) {
        guard request.isToOwnAccount, let username = request.from.localpart else {
            return responder.error(StanzaError(.forbidden, text: "Only your own roster can be read."))
        }
        request.session?.withPresence { $0.wantsRosterPushes = true }
        let requestedVersion = request.payload[attribute: "ver"]
        let user = request.from.bare
        Task { [rosters, pusher] in
            do {
                let (items, version) = try await rosters.roster(of: username)
                // §2.6 / XEP-0237: a client with a cached roster gets an empty result and the
                // changes since its version as pushes; the full roster only when that is unknown.
                if let requestedVersion {
                    if requestedVersion == String(version) { return responder.result() }
                    if let since = Int64(requestedVersion), since < version,
                        let changes = try await rosters.rosterChanges(of: username, since: since)
                    {
                        responder.result()
                        for change in changes {
                            let element = change.item.map(RosterXML.element) ?? RosterXML.removal(of: change.contact)
                            pusher.push(element, version: change.version, to: user)
                        }
                        return
                    }
                }
                responder.result(RosterXML.query(version: version, items: items.map(RosterXML.element)))
            } catch {
                responder.error(StanzaError(.internalServerError, text: "The roster could not be read."))
            }
        }
    }

    private func set(_ request: IQRequest, _ responder: IQResponder) {
        guard request.isToOwnAccount, let username = request.from.localpart else {
            return responder.error(StanzaError(.forbidden, text: "Only your own roster can be changed."))
        }
        let items = request.payload.children("item", namespace: RosterXML.namespace)
        guard items.count == 1, let item = items.first else {
            return responder.error(StanzaError(.badRequest, text: "A roster set carries exactly one item."))
        }
        guard let address = item[attribute: "jid"], let contact = try? JID(address) else {
            return responder.error(StanzaError(.jidMalformed, text: "The item's 'jid' is not a valid JID."))
        }
        let user = request.from.bare
        if item[attribute: "subscription"] == "remove" {
            presence.enqueue(for: user) { [presence] in
                do {
                    let removed = try await presence.removeContact(contact, of: user)
                    removed ? responder.result() : responder.error(StanzaError(.itemNotFound, text: "\(contact) is not in the roster."))
                } catch {
                    responder.error(StanzaError(.internalServerError, text: "The roster could not be changed."))
                }
            }
            return
        }
        let name = item[attribute: "name"].flatMap { $0.isEmpty ? nil : $0 }
        let groups = item.children("group", namespace: RosterXML.namespace).map(\.text)
        // RFC 6121 §2.3.3: a group named twice is the client's mistake, refused rather than
        // mended.
        if Set(groups).count != groups.count {
            return responder.error(StanzaError(.badRequest, text: "The item names a group more than once."))
        }
        if let error = validate(name: name, groups: groups, contact: contact, user: user) { return responder.error(error) }
        let maxItems = limits.maxItems
        let contactName = contact.description
        presence.enqueue(for: user) { [rosters, pusher] in
            do {
                let stored = try await rosters.modifyRoster(of: username) { transaction -> RosterItem? in
                    var updated = try transaction.item(contactName)
                    if updated == nil, try transaction.itemCount() >= maxItems { return nil }
                    updated = updated ?? RosterItem(contact: contactName)
                    updated?.name = name
                    updated?.groups = groups
                    try transaction.setItem(updated!)
                    return try transaction.item(contactName)
                }
                guard let stored else {
                    return responder.error(StanzaError(.notAllowed, text: "The roster is full (at most \(maxItems) contacts)."))
                }
                responder.result()
                pusher.push(RosterXML.element(for: stored), version: stored.version, to: user)
            } catch {
                responder.error(StanzaError(.internalServerError, text: "The roster could not be changed."))
            }
        }
    }

    private func validate(name: String?, groups: [String], contact: JID, user: JID) -> StanzaError? {
        if contact.bare == user {
            return StanzaError(.notAllowed, text: "You cannot add yourself to your roster.")
        }
        if let name, name.utf8.count > limits.maxNameBytes {
            return StanzaError(.notAcceptable, text: "The name is longer than \(limits.maxNameBytes) bytes.")
        }
        if groups.count > limits.maxGroups {
            return StanzaError(.notAcceptable, text: "An item may be in at most \(limits.maxGroups) groups.")
        }
        for group in groups where group.isEmpty || group.utf8.count > limits.maxGroupBytes {
            return StanzaError(.notAcceptable, text: "A group name must have 1 to \(limits.maxGroupBytes) bytes.")
        }
        return nil
    }
}
