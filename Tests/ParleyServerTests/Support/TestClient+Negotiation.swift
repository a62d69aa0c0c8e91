import ParleyCore
import Testing

/// Stream negotiation done the way a client does it, one step per helper, so scenarios can
/// stop at any step and send something else instead.
extension TestClient {
    static let streamNamespaces = "xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'"

    /// A client stream header; `nil` leaves an attribute out.
    static func header(to: String? = TestServer.domain, version: String? = "1.0", namespaces: String = streamNamespaces) -> String {
        var header = "<?xml version='1.0'?><stream:stream \(namespaces)"
        if let to { header += " to='\(to)'" }
        if let version { header += " version='\(version)'" }
        return header + ">"
    }

    /// Sends a header and returns the features the server answers with.
    @discardableResult
    func openStream() async throws -> XMLElement {
        try await send(Self.header())
        let header = try await expectHeader()
        #expect(header[attribute: "from"] == TestServer.domain)
        #expect(header[attribute: "version"] == "1.0")
        #expect(header[attribute: "id"]?.isEmpty == false)
        return try await expect("features", namespace: XMLNamespace.streams)
    }

    /// `<starttls/>`, `<proceed/>`, the handshake, and the new stream's features.
    @discardableResult
    func startTLS() async throws -> XMLElement {
        try await send("<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>")
        try await expect("proceed", namespace: XMLNamespace.tls)
        try await upgradeToTLS()
        return try await openStream()
    }

    /// Header, STARTTLS, and the secure stream's features.
    @discardableResult
    func secureStream() async throws -> XMLElement {
        try await openStream()
        return try await startTLS()
    }

    // MARK: SASL

    enum SASLOutcome: Equatable {
        /// `<success/>`; for SCRAM, only if the server's signature checked out.
        case success
        case failure(SASLFailure)

        var failureCondition: SASLFailure.Condition? {
            if case .failure(let failure) = self { failure.condition } else { nil }
        }
    }

    /// A SCRAM exchange with an initial response; checks the server signature on success.
    func authenticateSCRAM(
        _ hash: HashFunction = .sha256, username: String, password: String, authzid: String? = nil
    ) async throws -> SASLOutcome {
        var scram = SCRAMClient(hash: hash, username: username, password: password, authzid: authzid)
        let mechanism = hash == .sha256 ? "SCRAM-SHA-256" : "SCRAM-SHA-1"
        try await send(SASLElement.auth(mechanism: mechanism, initialResponse: try scram.clientFirst()).element.xmlString())
        let challenge = try await nextSASL()
        guard case .challenge(let serverFirst) = challenge else { return try outcome(of: challenge) }
        let clientFinal = try scram.receiveServerFirst(serverFirst)
        try await send(SASLElement.response(clientFinal).element.xmlString())
        let last = try await nextSASL()
        guard case .success(let serverFinal) = last else { return try outcome(of: last) }
        try scram.receiveServerFinal(serverFinal ?? [])
        guard scram.isAuthenticated else { throw ScenarioFailure("the server's SCRAM signature was not verified") }
        return .success
    }

    func authenticatePLAIN(username: String, password: String, authzid: String? = nil) async throws -> SASLOutcome {
        let message = try PLAINMessage(authzid: authzid, authcid: username, password: password).encoded()
        try await send(SASLElement.auth(mechanism: "PLAIN", initialResponse: message).element.xmlString())
        return try outcome(of: try await nextSASL())
    }

    /// The next element, which must be in the SASL namespace.
    func nextSASL(timeout: Duration = defaultTimeout) async throws -> SASLElement {
        let element = try await nextElement(timeout: timeout)
        guard element.namespace == XMLNamespace.sasl else { throw ScenarioFailure("expected a SASL element, got \(element.xmlString())") }
        return try SASLElement(parsing: element)
    }

    private func outcome(of element: SASLElement) throws -> SASLOutcome {
        switch element {
        case .success: return .success
        case .failure(let failure): return .failure(failure)
        default: throw ScenarioFailure("unexpected SASL element \(element.element.xmlString())")
        }
    }

    // MARK: Binding

    /// Sends a bind request and returns the server's iq answer (result or error).
    func bind(resource: String?, id: String = "bind-1") async throws -> XMLElement {
        let resourceElement = resource.map { "<resource>\($0)</resource>" } ?? ""
        try await send("<iq type='set' id='\(id)'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'>\(resourceElement)</bind></iq>")
        let reply = try await expect("iq")
        #expect(reply.id == id)
        return reply
    }

    /// STARTTLS, SCRAM-SHA-256, restart, bind; returns the bound full JID.
    @discardableResult
    func login(_ username: String, password: String, resource: String? = nil) async throws -> String {
        try await secureStream()
        let outcome = try await authenticateSCRAM(username: username, password: password)
        guard outcome == .success else { throw ScenarioFailure("login of \(username) failed: \(outcome)") }
        let features = try await openStream()
        guard features.firstChild("bind", namespace: XMLNamespace.bind) != nil else {
            throw ScenarioFailure("no <bind/> offered after authentication: \(features.xmlString())")
        }
        let reply = try await bind(resource: resource)
        guard reply.type == "result", let jid = reply.firstChild("bind", namespace: XMLNamespace.bind)?.firstChild("jid")?.text else {
            throw ScenarioFailure("bind failed: \(reply.xmlString())")
        }
        return jid
    }

    // MARK: Stanzas

    /// Sends an iq and returns the reply with the same id, which must come next.
    func query(_ iq: String, id: String, timeout: Duration = defaultTimeout) async throws -> XMLElement {
        try await send(iq)
        let reply = try await expect("iq", timeout: timeout)
        guard reply.id == id else { throw ScenarioFailure("expected the reply to '\(id)', got \(reply.xmlString())") }
        return reply
    }
}

extension XMLElement {
    /// The defined condition of an error stanza.
    var stanzaErrorCondition: StanzaErrorCondition? {
        StanzaError(stanza: self)?.condition
    }

    var stanzaErrorText: String? {
        StanzaError(stanza: self)?.text
    }
}
