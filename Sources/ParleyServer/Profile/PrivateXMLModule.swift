import ParleyCore

/// XEP-0049 private XML storage: elements a user keeps on the server for their own clients
/// (XEP-0048 bookmarks among them), found again by element name and namespace. Only the
/// account's own sessions may read or write them.
public final class PrivateXMLModule: ServerModule {
    public static let namespace = "jabber:iq:private"

    let profiles: ProfileService

    public init(profiles: ProfileService) {
        self.profiles = profiles
    }

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        try registry.handle(.get, "query", namespace: Self.namespace, for: .account) { [self] request, responder in
            handle(request, responder)
        }
        try registry.handle(.set, "query", namespace: Self.namespace, for: .account) { [self] request, responder in
            handle(request, responder)
        }
        // Prosody lists it among the server's features, where some clients look.
        registry.advertise(Self.namespace, for: .server)
    }

    private func handle(_ request: IQRequest, _ responder: IQResponder) {
        // §2.3 prefers forbidden to the service-unavailable some servers answer.
        guard request.isToOwnAccount, let username = request.from.localpart else {
            return responder.error(StanzaError(.forbidden, text: "Private storage belongs to its account alone."))
        }
        let elements = request.payload.elements
        guard let namespace = elements.first?.namespace else {
            return responder.error(
                StanzaError(.notAcceptable, text: "Name the element: one child of <query/> in its own namespace."))
        }
        // §2.3: one namespace per request, though several elements of it may come together.
        guard elements.allSatisfy({ $0.namespace == namespace }) else {
            return responder.error(StanzaError(.badRequest, text: "One private storage request covers one namespace."))
        }
        // No account holds more than this, so no request needs to name more.
        guard elements.count <= profiles.limits.maxPrivateElements else {
            return responder.error(
                StanzaError(
                    .notAcceptable,
                    text: "A request may name up to \(profiles.limits.maxPrivateElements) elements, as many as an account can store."))
        }
        guard Set(elements.map(\.name)).count == elements.count else {
            return responder.error(StanzaError(.badRequest, text: "The request names the same element twice."))
        }
        let origin = request.from
        if request.kind == .set {
            return responder.answer { [profiles] in
                try await profiles.setPrivateXML(elements, of: username, by: origin)
                return nil
            }
        }
        if let reason = ProfileService.reservedReason(namespace) {
            return responder.error(StanzaError(.notAcceptable, text: reason))
        }
        responder.answer { [profiles] in
            let stored = try await profiles.privateXML(of: username, elements.map { ($0.name, namespace) })
            var query = XMLElement("query", namespace: Self.namespace)
            // What was never stored comes back as it was asked for, empty.
            for (asked, found) in zip(elements, stored) { query.append(found ?? asked) }
            return query
        }
    }
}
