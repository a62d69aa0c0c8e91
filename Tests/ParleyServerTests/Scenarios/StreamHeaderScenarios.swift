import ParleyCore
import Testing

/// RFC 6120 §4.8–4.9: what the server does with a bad stream header or bad XML. Each case
/// must end in the right stream error and a closed connection.
@Suite struct StreamHeaderScenarios {
    /// Sends `bytes` as the first thing on a fresh connection and expects `condition`.
    @discardableResult
    private func refused(_ bytes: String, _ condition: StreamErrorCondition) async throws -> StreamError {
        try await TestServer.with { server in
            let client = try await server.connect()
            try await client.send(bytes)
            return try await client.expectStreamError(condition)
        }
    }

    @Test func aWrongToIsHostUnknown() async throws {
        let error = try await refused(TestClient.header(to: "example.org"), .hostUnknown)
        #expect(error.text?.contains("example.org") == true)
    }

    @Test func aMissingToIsHostUnknown() async throws {
        try await refused(TestClient.header(to: nil), .hostUnknown)
    }

    @Test func theServerOpensItsStreamBeforeTheErrorAndAnswersFromItsDomain() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            try await client.send(TestClient.header(to: "example.org"))
            let header = try await client.expectHeader()
            #expect(header[attribute: "from"] == TestServer.domain)
            #expect(header.namespace == XMLNamespace.streams && header.defaultNamespace == XMLNamespace.client)
            try await client.expectStreamError(.hostUnknown)
        }
    }

    /// RFC 6120 §4.7.2: the response header is addressed to the initiator's 'from'.
    @Test func theResponseHeaderIsAddressedToTheClientsFrom() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            try await client.send("<?xml version='1.0'?><stream:stream \(TestClient.streamNamespaces) from='alice@localhost' to='localhost' version='1.0'>")
            let header = try await client.expectHeader()
            #expect(header[attribute: "to"] == "alice@localhost")
            #expect(header[attribute: "from"] == "localhost")
            try await client.expect("features", namespace: XMLNamespace.streams)
        }
    }

    @Test func aWrongContentNamespaceIsInvalidNamespace() async throws {
        let namespaces = "xmlns='jabber:server' xmlns:stream='http://etherx.jabber.org/streams'"
        let error = try await refused(TestClient.header(namespaces: namespaces), .invalidNamespace)
        #expect(error.text?.contains("jabber:server") == true)
    }

    @Test func aWrongStreamNamespaceIsInvalidNamespace() async throws {
        let namespaces = "xmlns='jabber:client' xmlns:stream='http://example.org/streams'"
        try await refused(TestClient.header(namespaces: namespaces), .invalidNamespace)
    }

    @Test func version2IsUnsupported() async throws {
        try await refused(TestClient.header(version: "2.0"), .unsupportedVersion)
    }

    @Test func aMissingVersionIsUnsupported() async throws {
        try await refused(TestClient.header(version: nil), .unsupportedVersion)
    }

    @Test func brokenXMLAfterTheHeaderIsNotWellFormed() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            try await client.openStream()
            try await client.send("<message to='bob@localhost'><body>hi</message>")
            try await client.expectStreamError(.notWellFormed)
        }
    }

    @Test func aDoctypeIsRestrictedXML() async throws {
        let doctype = "<?xml version='1.0'?><!DOCTYPE stream:stream [<!ENTITY boom 'boom'>]>"
        try await refused(doctype + TestClient.header().replacingOccurrences(of: "<?xml version='1.0'?>", with: ""), .restrictedXML)
    }

    @Test func aCommentIsRestrictedXML() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            try await client.openStream()
            try await client.send("<!-- hello -->")
            try await client.expectStreamError(.restrictedXML)
        }
    }

    /// The restarted stream after STARTTLS is a new stream: an error in its header must come
    /// after a new server header, or the client cannot parse it.
    @Test func aBadHeaderAfterSTARTTLSGetsItsOwnServerHeaderFirst() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            try await client.openStream()
            try await client.send("<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>")
            try await client.expect("proceed", namespace: XMLNamespace.tls)
            try await client.upgradeToTLS()
            try await client.send(TestClient.header(namespaces: "xmlns='jabber:client' xmlns:stream='urn:example:wrong'"))
            let header = try await client.expectHeader()
            #expect(header[attribute: "from"] == TestServer.domain)
            try await client.expectStreamError(.invalidNamespace)
        }
    }

    @Test func aBadHeaderAfterSASLGetsItsOwnServerHeaderFirst() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            try await client.secureStream()
            #expect(try await client.authenticateSCRAM(username: "alice", password: "alice-password") == .success)
            try await client.send("<?xml version='1.0'?><!DOCTYPE x><stream:stream \(TestClient.streamNamespaces) to='localhost' version='1.0'>")
            try await client.expectHeader()
            try await client.expectStreamError(.restrictedXML)
        }
    }

    @Test func anUnknownElementBeforeAuthenticationIsUnsupportedStanzaType() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            try await client.secureStream()
            try await client.send("<hello xmlns='urn:example:unknown'/>")
            try await client.expectStreamError(.unsupportedStanzaType)
        }
    }

    /// XEP-0198 §3: stream management before authentication is `<failed/>`, and the stream
    /// goes on to authenticate.
    @Test func streamManagementBeforeAuthenticationFailsAndTheStreamGoesOn() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            try await client.secureStream()
            for request in ["<enable xmlns='urn:xmpp:sm:3'/>", "<resume xmlns='urn:xmpp:sm:3' h='0' previd='x'/>"] {
                try await client.send(request)
                let failed = try await client.nextElement()
                #expect(
                    failed.name == "failed" && failed.namespace == "urn:xmpp:sm:3"
                        && failed.firstChild("unexpected-request", namespace: "urn:ietf:params:xml:ns:xmpp-stanzas") != nil,
                    "\(failed.xmlString())")
            }
            #expect(try await client.authenticateSCRAM(username: "alice", password: "alice-password") == .success)
        }
    }

    /// A client that speaks direct TLS to the STARTTLS port: the first byte 0x16 is not XML.
    @Test func aTLSClientHelloOnThePlaintextPortIsNotWellFormed() async throws {
        let clientHello: [UInt8] = [
            0x16, 0x03, 0x01, 0x00, 0x2f, 0x01, 0x00, 0x00, 0x2b, 0x03, 0x03,
        ] + [UInt8](repeating: 0x42, count: 32) + [0x00, 0x00, 0x02, 0x13, 0x01, 0x01, 0x00]
        let error = try await TestServer.with { server in
            let client = try await server.connect()
            try await client.send(clientHello)
            return try await client.expectStreamError(.notWellFormed)
        }
        let text = try #require(error.text)
        #expect(text.contains("TLS"), "the error should tell a misconfigured client it spoke TLS to the STARTTLS port: \(text)")
    }
}
