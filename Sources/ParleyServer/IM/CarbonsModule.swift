import ParleyCore

/// XEP-0280 message carbons (urn:xmpp:carbons:2): a session that enabled carbons gets a
/// `<received/>` copy of the account's messages delivered to its other resources and a
/// `<sent/>` copy of what its other resources send, both from the account's bare JID.
public final class CarbonsModule: ServerModule, Sendable {
    public static let namespace = XMLNamespace.carbons
    /// Payloads that make a message an IM exchange even without a body (XEP-0280 §6):
    /// chat states, receipts, chat markers, retractions.
    static let imNamespaces: Set<String> = [
        "http://jabber.org/protocol/chatstates", XMLNamespace.receipts, XMLNamespace.chatMarkers, XMLNamespace.messageRetract,
    ]

    let sessions: SessionRegistry

    public init(sessions: SessionRegistry) {
        self.sessions = sessions
    }

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        // Clients address the request to their server or leave 'to' out (their own account).
        for target in [IQTarget.server, .account] {
            try registry.handle(.set, "enable", namespace: Self.namespace, for: target, advertise: target == .server) { request, responder in
                Self.toggle(request, responder, enabled: true)
            }
            try registry.handle(.set, "disable", namespace: Self.namespace, for: target, advertise: false) { request, responder in
                Self.toggle(request, responder, enabled: false)
            }
        }
        try registry.copyMessages { [self] message, sender, recipient, delivered in
            copy(message, from: sender, to: recipient, deliveredTo: delivered)
        }
    }

    private static func toggle(_ request: IQRequest, _ responder: IQResponder, enabled: Bool) {
        guard request.to.isDomain || request.isToOwnAccount, let session = request.session else {
            return responder.error(StanzaError(.forbidden))
        }
        session.withPresence { $0.wantsCarbons = enabled }
        responder.result()
    }

    /// XEP-0280 §6 eligibility: not `<private/>` or `<no-copy/>`; of type chat, or normal
    /// with a body, or carrying an IM payload. Errors and groupchat are never copied.
    static func isEligible(_ message: XMLElement) -> Bool {
        if message.firstChild("private", namespace: namespace) != nil
            || message.firstChild("no-copy", namespace: XMLNamespace.hints) != nil
        {
            return false
        }
        // A carbon is never copied again.
        if message.firstChild("sent", namespace: namespace) != nil || message.firstChild("received", namespace: namespace) != nil {
            return false
        }
        switch message.type ?? "normal" {
        case "chat": return true
        case "normal":
            return message.firstChild("body") != nil || message.elements.contains { imNamespaces.contains($0.namespace ?? "") }
        default: return false
        }
    }

    func copy(_ message: RoutedMessage, from sender: SessionHandle, to recipient: JID, deliveredTo delivered: [SessionHandle]) {
        // Who would get a copy first, whether the message may be copied second: most accounts
        // are on one device, and then there is nobody (the eligibility test walks the
        // message's children several times; it was 1 % of a message's CPU).
        let senderAccount = sender.jid.bare
        let sent = sessions.sessions(of: senderAccount, except: { $0 == sender || delivered.contains($0) })
            .filter { $0.withPresence { $0.wantsCarbons } }
        let recipientAccount = recipient.bare
        let received =
            recipientAccount == senderAccount
            ? []
            : sessions.sessions(of: recipientAccount, except: { delivered.contains($0) }).filter { $0.withPresence { $0.wantsCarbons } }
        guard !sent.isEmpty || !received.isEmpty, Self.isEligible(message.forRecipient) else { return }
        for session in sent {
            session.deliver(Self.carbon("sent", of: message.forSender, account: senderAccount, to: session.jid))
        }
        for session in received {
            session.deliver(Self.carbon("received", of: message.forRecipient, account: recipientAccount, to: session.jid))
        }
    }

    static func carbon(_ kind: String, of message: XMLElement, account: JID, to session: JID) -> XMLElement {
        var inner = message
        if inner.namespace == nil { inner.namespace = XMLNamespace.client }
        var forwarded = XMLElement("forwarded", namespace: XMLNamespace.forward)
        forwarded.append(inner)
        var wrapper = XMLElement(kind, namespace: namespace)
        wrapper.append(forwarded)
        var carbon = XMLElement(
            "message", namespace: XMLNamespace.client,
            ["from": account.description, "to": session.description, "type": message.type ?? "normal"])
        carbon.append(wrapper)
        return carbon
    }
}
