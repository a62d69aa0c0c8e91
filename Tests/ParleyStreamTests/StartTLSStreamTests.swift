import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyStream
import ParleyTLS
import Testing

/// The decoder, the encoder and the TLS handler together: a whole STARTTLS upgrade between
/// two EmbeddedChannels, with no sockets and no threads.
@Suite struct StartTLSStreamTests {
    static let secret = XMLElement(
        "message", namespace: XMLNamespace.client, ["to": "romeo@example.test", "id": "over-tls"],
        [XMLElement("body", text: "The secret: Grüße & <tags>")])

    @Test func upgradeThenANewStreamAndAStanzaOverTLS() throws {
        let pair = try StreamPair(stanzas: [Self.secret])
        try pair.connect()
        try pair.shuttle()

        let server = pair.serverNegotiator
        let client = pair.clientNegotiator
        #expect(server.errors.isEmpty && client.errors.isEmpty)
        #expect(server.secured && client.secured)
        #expect(server.tlsEvents.count == 1 && client.tlsEvents.count == 1)

        // Server: header, <starttls/>, then over TLS the new header and the stanza.
        try #require(server.events.count == 4)
        #expect(server.events[0].header?[attribute: "to"] == StreamTestCertificates.domain)
        #expect(server.events[1].element == StartTLSElements.starttls)
        #expect(server.events[2].header?[attribute: "to"] == StreamTestCertificates.domain)
        #expect(server.events[3].element == Self.secret)

        // Client: header, features offering TLS, <proceed/>; then the second header and features.
        try #require(client.events.count == 5)
        #expect(client.events[0].header?[attribute: "id"] == "s1")
        #expect(client.events[1].element?.firstChild("starttls", namespace: XMLNamespace.tls) != nil)
        #expect(client.events[2].element == StartTLSElements.proceed)
        #expect(client.events[3].header?[attribute: "id"] == "s2")
        #expect(client.events[4].element?.firstChild("bind", namespace: XMLNamespace.bind) != nil)

        // On the wire: the negotiation in the clear, the rest not.
        let fromClient = pair.transcript(fromClient: true)
        let fromServer = pair.transcript(fromClient: false)
        #expect(fromClient.contains("<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>"))
        #expect(fromServer.contains("<proceed xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>"))
        #expect(!fromClient.contains("secret") && !fromClient.contains("over-tls"))
        #expect(!fromServer.contains("id='s2'"))
    }

    /// Plaintext an attacker appends after `<starttls/>` in the same segment never reaches
    /// the stream over TLS (the CVE-2011-0411 class of bug).
    @Test func plaintextInjectedAfterStartTLSIsDropped() throws {
        let attacked = try StreamPair(stanzas: [Self.secret])
        try attacked.connect()
        // Client header → server; server header + features → client; client's <starttls/> out.
        try attacked.move(from: attacked.client, to: attacked.server, fromClient: true)
        try attacked.move(from: attacked.server, to: attacked.client, fromClient: false)
        let injection = "<iq type='set' id='evil'><query xmlns='jabber:iq:roster'><item jid='mallory@evil.example'/></query></iq>"
        try attacked.move(from: attacked.client, to: attacked.server, fromClient: true) { buffer in
            var buffer = buffer
            if String(buffer: buffer).contains("starttls") { buffer.writeString(injection) }
            return buffer
        }
        try attacked.shuttle()

        let events = attacked.serverNegotiator.events
        #expect(!events.contains { $0.element?.id == "evil" })
        #expect(events.count == 4)
        #expect(events.last?.element == Self.secret)
        #expect(attacked.serverNegotiator.errors.isEmpty && attacked.clientNegotiator.errors.isEmpty)
    }

    /// The stream over TLS carries a real session: several stanzas, then a clean close.
    @Test func severalStanzasOverTLSThenClose() throws {
        let pair = try StreamPair(stanzas: RoundTripTests.stanzas)
        try pair.connect()
        try pair.shuttle()
        let received = pair.serverNegotiator.events.dropFirst(3).compactMap(\.element)
        #expect(received == RoundTripTests.stanzas)

        try pair.client.writeAndFlush(XMLStreamOutput.close).wait()
        try pair.shuttle()
        #expect(pair.serverNegotiator.events.last == .streamClosed)
        #expect(pair.clientNegotiator.events.last == .streamClosed)
        #expect(pair.serverNegotiator.errors.isEmpty && pair.clientNegotiator.errors.isEmpty)
    }
}
