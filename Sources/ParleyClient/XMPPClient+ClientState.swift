import ParleyCore

extension XMPPClient {
    /// XEP-0352 Client State Indication: tells a server that offers it (`<csi/>` among the
    /// stream features) whether the user is looking, so it may hold back what is not urgent
    /// while not. Remembered, and said again after every reconnect. Returns false when the
    /// current session's server does not offer it (nothing is sent then).
    @discardableResult
    public func setActive(_ active: Bool) -> Bool {
        clientState = active
        guard boundJID != nil else { return false }
        return sendClientState(active)
    }

    /// The server of the current session offers XEP-0352.
    public var supportsClientStateIndication: Bool {
        streamFeatures?.firstChild("csi", namespace: Self.csiNamespace) != nil
    }

    static let csiNamespace = "urn:xmpp:csi:0"

    @discardableResult
    func sendClientState(_ active: Bool) -> Bool {
        guard supportsClientStateIndication, let connection else { return false }
        // A nonza, not a stanza: XEP-0198 does not count it, so it bypasses `transmit`.
        connection.send(XMLElement(active ? "active" : "inactive", namespace: Self.csiNamespace))
        return true
    }
}
