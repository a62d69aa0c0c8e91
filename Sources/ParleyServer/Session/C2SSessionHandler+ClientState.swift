import NIOCore
import ParleyCore

/// XEP-0352 on the stream: `<inactive/>` and `<active/>` from a bound client, and the flush
/// of what was held back for it.
extension C2SSessionHandler {
    static let clientStateFeature = XMLElement("csi", namespace: ClientStateQueue.namespace)

    func isClientState(_ element: XMLElement) -> Bool {
        element.namespace == ClientStateQueue.namespace
    }

    /// `<active/>` or `<inactive/>`. Before the bind there is nothing to hold yet: the
    /// state is remembered and applies to the session once bound.
    func clientState(_ element: XMLElement) {
        let active: Bool
        switch element.name {
        case "active": active = true
        case "inactive": active = false
        default:
            return fail(StreamError(.unsupportedStanzaType, text: "<\(element.name)/> is not a client state indication."))
        }
        clientInactive = !active
        guard let session = boundSession, case .bound = phase else { return }
        applyClientState(active: active, session: session)
    }

    /// A stanza from an inactive client: its radio is on anyway, so what waited goes out
    /// now (as Prosody does on any client activity); it stays inactive. XEP-0198 nonzas do
    /// not count: clients answer `<r/>` in the background without being looked at.
    func clientIsAwake() {
        guard clientInactive, let session = boundSession else { return }
        applyClientState(active: nil, session: session)
    }

    func applyClientState(active: Bool?, session: BoundSession) {
        switch session.clientState(active: active, by: ObjectIdentifier(self)) {
        case .notAttached:
            return
        case .overflow:
            fail(StreamError(.resourceConstraint, text: "Too many stanzas were left unacknowledged."))
        case .flush(let stanzas, let managed):
            sendHeld(stanzas, managed: managed)
        }
    }

    func sendHeld(_ stanzas: [XMLElement], managed: Bool) {
        for stanza in stanzas {
            sendSoon(stanza)
            if managed { sentManagedStanza() }
        }
    }
}
