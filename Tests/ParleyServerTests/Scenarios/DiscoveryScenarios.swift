import Foundation
import ParleyCore
import ParleyServer
import Testing

/// What the server says about itself: XEP-0157 contact addresses in its disco#info, its own
/// XEP-0115 capabilities, and XEP-0215 STUN/TURN services with coturn REST credentials.
@Suite struct DiscoveryScenarios {
    static let info = "http://jabber.org/protocol/disco#info"
    static let forms = "jabber:x:data"
    static let caps = "http://jabber.org/protocol/caps"
    static let extdisco = "urn:xmpp:extdisco:2"

    private func serverInfo(_ client: TestClient, node: String? = nil, id: String = "info") async throws -> XMLElement {
        let nodeAttribute = node.map { " node='\($0)'" } ?? ""
        return try await client.query("<iq type='get' id='\(id)' to='localhost'><query xmlns='\(Self.info)'\(nodeAttribute)/></iq>", id: id)
    }

    // MARK: XEP-0157

    @Test func contactAddressesAreAServerInfoFormInDiscoInfo() async throws {
        try await TestServer.with({
            $0.contactInfo.abuse = ["mailto:abuse@localhost", "xmpp:abuse@localhost"]
            $0.contactInfo.security = ["https://localhost/security"]
        }) { server in
            let alice = try await server.login("alice")
            let query = try #require(try await serverInfo(alice).firstChild("query", namespace: Self.info))
            let forms = query.children("x", namespace: Self.forms)
            #expect(forms.count == 1)
            let form = try #require(forms.first)
            #expect(form[attribute: "type"] == "result")
            let fields = form.children("field", namespace: Self.forms)
            #expect(fields.map { $0[attribute: "var"] ?? "" } == ["FORM_TYPE", "abuse-addresses", "security-addresses"])
            #expect(fields[0][attribute: "type"] == "hidden")
            #expect(fields[0].children("value", namespace: Self.forms).map(\.text) == ["http://jabber.org/network/serverinfo"])
            #expect(fields[1][attribute: "type"] == "list-multi")
            #expect(fields[1].children("value", namespace: Self.forms).map(\.text) == ["mailto:abuse@localhost", "xmpp:abuse@localhost"])
            #expect(fields[2].children("value", namespace: Self.forms).map(\.text) == ["https://localhost/security"])
        }
    }

    @Test func withoutAddressesThereIsNoForm() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let query = try #require(try await serverInfo(alice).firstChild("query", namespace: Self.info))
            #expect(query.children("x", namespace: Self.forms).isEmpty)
        }
    }

    // MARK: XEP-0115

    @Test func theCapsFeatureHashesExactlyWhatDiscoInfoSays() async throws {
        try await TestServer.with({ $0.contactInfo.support = ["xmpp:support@localhost"] }) { server in
            let client = try await server.connect()
            let features = try await client.authenticate("alice")
            let c = try #require(features.firstChild("c", namespace: Self.caps), "\(features.xmlString())")
            #expect(c[attribute: "hash"] == "sha-1" && c[attribute: "node"] == "https://parley.im")
            let ver = try #require(c[attribute: "ver"])
            _ = try await client.bind(resource: "r")

            let reply = try await serverInfo(client)
            let query = try #require(reply.firstChild("query", namespace: Self.info))
            #expect(!query.children("x", namespace: Self.forms).isEmpty, "the form takes part in the hash")
            #expect(try CapsCheck.ver(of: query) == ver)

            // §6.2: the node#ver names the same information.
            let byNode = try await serverInfo(client, node: "https://parley.im#\(ver)", id: "node")
            let nodeQuery = try #require(byNode.firstChild("query", namespace: Self.info), "\(byNode.xmlString())")
            #expect(nodeQuery[attribute: "node"] == "https://parley.im#\(ver)")
            #expect(try CapsCheck.ver(of: nodeQuery) == ver)
            #expect(nodeQuery.elements.count == query.elements.count)

            let stale = try await serverInfo(client, node: "https://parley.im#stale", id: "stale")
            #expect(stale.type == "error" && stale.stanzaErrorCondition == .itemNotFound)
        }
    }

    // MARK: XEP-0215

    static let secret = "coturn-shared-secret"

    private static func turn(_ configuration: inout ServerConfiguration) {
        configuration.turn.host = "turn.localhost"
        configuration.turn.secret = secret
        configuration.turn.tcp = true
        configuration.turn.tlsPort = 5349
        configuration.turn.ttl = .seconds(600)
    }

    /// Checks a restricted service's credentials as coturn would: the expiry in the username,
    /// the password recomputed from the shared secret.
    private func checkCredentials(_ service: XMLElement, user: String) throws {
        #expect(service[attribute: "restricted"] == "true")
        let username = try #require(service[attribute: "username"])
        let parts = username.split(separator: ":", maxSplits: 1).map(String.init)
        #expect(parts.count == 2 && parts[1] == user)
        let expiry = try #require(Double(parts[0]))
        #expect(abs(expiry - Date().timeIntervalSince1970 - 600) < 30, "ttl is 600 s: \(username)")
        let mac = try HashFunction.sha1.hmac(key: Array(Self.secret.utf8), data: Array(username.utf8))
        #expect(service[attribute: "password"] == Data(mac).base64EncodedString())
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let expires = try #require(service[attribute: "expires"].flatMap(formatter.date(from:)))
        #expect(expires.timeIntervalSince1970 == expiry)
    }

    @Test func servicesAreListedWithTURNCredentials() async throws {
        try await TestServer.with(Self.turn) { server in
            let alice = try await server.login("alice")
            let info = try await serverInfo(alice)
            #expect(info.firstChild("query")?.children("feature").contains { $0[attribute: "var"] == Self.extdisco } == true)

            let reply = try await alice.query("<iq type='get' id='s' to='localhost'><services xmlns='\(Self.extdisco)'/></iq>", id: "s")
            let services = try #require(reply.firstChild("services", namespace: Self.extdisco), "\(reply.xmlString())")
                .children("service", namespace: Self.extdisco)
            let described = services.map { "\($0[attribute: "type"] ?? "")/\($0[attribute: "transport"] ?? ""):\($0[attribute: "host"] ?? ""):\($0[attribute: "port"] ?? "")" }
            #expect(described == ["stun/udp:turn.localhost:3478", "turn/udp:turn.localhost:3478", "turn/tcp:turn.localhost:3478", "turns/tcp:turn.localhost:5349"])
            #expect(services[0][attribute: "restricted"] == nil && services[0][attribute: "password"] == nil)
            for service in services.dropFirst() { try checkCredentials(service, user: "alice") }

            let turnOnly = try await alice.query(
                "<iq type='get' id='t' to='localhost'><services xmlns='\(Self.extdisco)' type='turn'/></iq>", id: "t")
            let turns = turnOnly.firstChild("services", namespace: Self.extdisco)?.children("service", namespace: Self.extdisco) ?? []
            #expect(turns.map { $0[attribute: "transport"] } == ["udp", "tcp"] && turns.allSatisfy { $0[attribute: "type"] == "turn" })
        }
    }

    @Test func credentialsAreGivenForOneNamedService() async throws {
        try await TestServer.with(Self.turn) { server in
            let bob = try await server.login("bob")
            let reply = try await bob.query(
                "<iq type='get' id='c' to='localhost'><credentials xmlns='\(Self.extdisco)'><service type='turns' host='turn.localhost'/></credentials></iq>",
                id: "c")
            let services = reply.firstChild("credentials", namespace: Self.extdisco)?.children("service", namespace: Self.extdisco) ?? []
            #expect(services.count == 1, "\(reply.xmlString())")
            let service = try #require(services.first)
            #expect(service[attribute: "port"] == "5349")
            try checkCredentials(service, user: "bob")

            for (id, service, condition) in [
                ("unknown", "<service type='turn' host='elsewhere.example'/>", StanzaErrorCondition.itemNotFound),
                ("port", "<service type='turn' host='turn.localhost' port='9'/>", .itemNotFound),
                ("untyped", "<service host='turn.localhost'/>", .badRequest),
            ] {
                let error = try await bob.query(
                    "<iq type='get' id='\(id)' to='localhost'><credentials xmlns='\(Self.extdisco)'>\(service)</credentials></iq>", id: id)
                #expect(error.type == "error" && error.stanzaErrorCondition == condition, "\(id): \(error.xmlString())")
            }
        }
    }

    @Test func withoutAServiceConfiguredTheRequestIsUnavailable() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let reply = try await alice.query("<iq type='get' id='s' to='localhost'><services xmlns='\(Self.extdisco)'/></iq>", id: "s")
            #expect(reply.type == "error" && reply.stanzaErrorCondition == .serviceUnavailable)
        }
    }
}
