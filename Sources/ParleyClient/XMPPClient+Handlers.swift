import ParleyCore

/// What layers built on the client (the IM layer, the cache, the CLI) register to hear.
extension XMPPClient {
    /// Registers code that runs after each successful (re)connection, once the outbox is
    /// sent; the flag says the previous session was resumed (XEP-0198), so the server kept
    /// its state (presence, roster subscription) and nothing was missed.
    public func addEstablishedHandler(_ handler: @escaping @Sendable (JID, Bool) async -> Void) {
        establishedHandlers.append(handler)
    }

    /// Registers code that learns which sent stanzas the server has taken responsibility
    /// for: acknowledged under XEP-0198, or written to the connection when the server does
    /// not do acknowledgements. Called in order, on the client's own executor: hand the work on.
    public func addAcknowledgementHandler(_ handler: @escaping @Sendable ([XMLElement]) -> Void) {
        acknowledgementHandlers.append(handler)
    }

    /// Registers code that sees every stanza received (the IM layer builds on this). Stanzas
    /// are handed over one at a time in arrival order; a handler must not wait for an answer
    /// from the server (hand the work to a task instead), or it would wait for itself.
    public func addStanzaHandler(_ handler: @escaping @Sendable (XMLElement) async -> Void) {
        stanzaHandlers.append(handler)
    }
}
