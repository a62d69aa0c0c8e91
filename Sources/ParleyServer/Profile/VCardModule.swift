import ParleyCore

/// XEP-0054 vcard-temp. The server answers for its accounts: a user reads and replaces their
/// own vCard, anyone may read another local account's (vCards are public, as in Prosody),
/// nobody writes another's.
public final class VCardModule: ServerModule {
    public static let namespace = ProfileService.vCardNamespace

    let profiles: ProfileService

    public init(profiles: ProfileService) {
        self.profiles = profiles
    }

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        try registry.handle(.get, "vCard", namespace: Self.namespace, for: .account) { [self] request, responder in
            get(request, responder)
        }
        try registry.handle(.set, "vCard", namespace: Self.namespace, for: .account) { [self] request, responder in
            set(request, responder)
        }
        // The server itself has no vCard; handling its address is also what puts the feature
        // in the server's disco#info, where clients look for it (XEP-0054 §3).
        try registry.handle(.get, "vCard", namespace: Self.namespace, for: .server) { _, responder in
            responder.error(StanzaError(.itemNotFound, text: "This server has no vCard."))
        }
        try registry.handle(.set, "vCard", namespace: Self.namespace, for: .server) { _, responder in
            responder.error(StanzaError(.forbidden, text: "Only a user's own vCard can be changed."))
        }
    }

    private func get(_ request: IQRequest, _ responder: IQResponder) {
        guard let username = request.to.localpart else { return responder.error(StanzaError(.itemNotFound)) }
        let own = request.isToOwnAccount
        responder.answer { [profiles] in
            if let vCard = try await profiles.vCard(of: username) { return vCard }
            // One's own missing vCard is an empty one (§3.1 allows either); another's is not
            // found whether or not the account exists, so a vCard query cannot probe for
            // accounts.
            guard own else { throw StanzaError(.itemNotFound, text: "There is no vCard for \(request.to).") }
            return XMLElement("vCard", namespace: Self.namespace)
        }
    }

    private func set(_ request: IQRequest, _ responder: IQResponder) {
        // §3.2: only the user's own bare JID (or no 'to').
        guard request.isToOwnAccount, let username = request.from.localpart else {
            return responder.error(StanzaError(.forbidden, text: "Only your own vCard can be changed."))
        }
        let vCard = request.payload
        let origin = request.from
        responder.answer { [profiles] in
            try await profiles.setVCard(vCard, of: username, by: origin)
            return nil
        }
    }
}
