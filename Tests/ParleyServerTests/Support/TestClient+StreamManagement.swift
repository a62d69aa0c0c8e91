import ParleyCore
import Testing

/// XEP-0198 from the client side, for the stream management scenarios.
extension TestClient {
    static let sm = "urn:xmpp:sm:3"

    /// STARTTLS, SCRAM-SHA-256 and the restart: returns the features offered for binding.
    @discardableResult
    func authenticate(_ username: String, password: String? = nil) async throws -> XMLElement {
        try await secureStream()
        let outcome = try await authenticateSCRAM(
            username: username, password: password ?? TestServer.defaultAccounts[username] ?? "")
        guard outcome == .success else { throw ScenarioFailure("login of \(username) failed: \(outcome)") }
        return try await openStream()
    }

    /// `<enable/>`, answered with `<enabled/>`.
    @discardableResult
    func enableStreamManagement(resume: Bool) async throws -> XMLElement {
        try await send(resume ? "<enable xmlns='urn:xmpp:sm:3' resume='true'/>" : "<enable xmlns='urn:xmpp:sm:3'/>")
        return try await expect("enabled", namespace: Self.sm)
    }

    /// The next element other than the server's acknowledgement requests (`<r/>`).
    func nextIgnoringAckRequests(timeout: Duration = defaultTimeout) async throws -> XMLElement {
        while true {
            let element = try await nextElement(timeout: timeout)
            if element.name == "r", element.namespace == Self.sm { continue }
            return element
        }
    }

    @discardableResult
    func expectIgnoringAckRequests(
        _ name: String, namespace: String = XMLNamespace.client, timeout: Duration = defaultTimeout
    ) async throws -> XMLElement {
        let element = try await nextIgnoringAckRequests(timeout: timeout)
        guard element.name == name, element.namespace == namespace else {
            throw ScenarioFailure("expected <\(name) xmlns='\(namespace)'>, got \(element.xmlString())")
        }
        return element
    }

    /// `<r/>`, answered with the server's `h`.
    func requestAcknowledgement() async throws -> UInt32? {
        try await send("<r xmlns='urn:xmpp:sm:3'/>")
        let answer = try await expectIgnoringAckRequests("a", namespace: Self.sm)
        return answer[attribute: "h"].flatMap { UInt32($0) }
    }

    /// The ids of the next `count` messages, past the server's `<r/>`s and anything else.
    func nextMessageIDs(_ count: Int) async throws -> [String] {
        var ids: [String] = []
        while ids.count < count {
            let element = try await nextIgnoringAckRequests()
            if element.name == "message", let id = element.id { ids.append(id) }
        }
        return ids
    }
}
