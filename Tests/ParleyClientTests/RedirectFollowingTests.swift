import Foundation
import ParleyCore
import ParleyServer
import Testing

@testable import ParleyClient

/// A rolling restart seen from the client: the node it is on shuts down with `see-other-host`
/// (TCP) or `<close see-other-uri/>` (WebSocket), and the client signs in on the node named,
/// with the same credentials, offering its session for resumption there.
@Suite struct RedirectFollowingTests {
    @Test func aTCPClientFollowsSeeOtherHostToTheOtherNode() async throws {
        let certificates = try await rootCapableCertificate(in: NSTemporaryDirectory() + "parley-redirect-" + UUID().uuidString)
        let other = try await TestServer.start { (configuration: inout ServerConfiguration) in
            (configuration.tls.certificate, configuration.tls.key) = certificates
        }
        let otherHost = "127.0.0.1:\(other.running.c2sPort)"
        let restarting = try await TestServer.start { (configuration: inout ServerConfiguration) in
            (configuration.tls.certificate, configuration.tls.key) = certificates
            configuration.shutdown.redirectHost = otherHost
        }
        do {
            for server in [restarting, other] { try await server.createAccount("alice") }
            try await other.createAccount("bob")
            let (alice, aliceEvents) = try restarting.client("alice")
            try await alice.connect()
            try await aliceEvents.next("signed in") { if case .connected = $0 { true } else { false } }

            await restarting.running.shutdown()
            try await aliceEvents.next("the redirect") { $0 == .disconnected(.redirected(to: otherHost)) }
            let again = try await aliceEvents.next("signed in on the other node") {
                switch $0 {
                case .connected, .resumed: true
                default: false
                }
            }
            // The other node never saw the session: a new one, with the same credentials.
            guard case .connected(let jid) = again else { throw TimedOut(description: "\(again)") }
            #expect(await alice.xmpp.connectedVia?.serverPort == other.running.c2sPort)
            let (bob, bobEvents) = try other.client("bob")
            try await bob.connect()
            let hello = await alice.sendMessage(to: try JID("bob@localhost"), body: "from the other node")
            try await bobEvents.next("Alice's message") { if case .message(let m) = $0 { m.id == hello && m.from.bare == jid.bare } else { false } }
            await alice.disconnect()
            await bob.disconnect()
        } catch {
            await restarting.stop()
            await other.stop()
            throw error
        }
        await restarting.stop()
        await other.stop()
    }

    @Test func aWebSocketClientFollowsSeeOtherURI() async throws {
        let shared = NSTemporaryDirectory() + "parley-redirect-" + UUID().uuidString
        let other = try await WebSocketTestServer.start(certificateDirectory: shared)
        let otherURL = other.webSocketURL
        let restarting = try await WebSocketTestServer.start(certificateDirectory: shared) { configuration in
            configuration.shutdown.redirectWebSocketURI = otherURL.description
        }
        do {
            for web in [restarting, other] { try await web.server.createAccount("alice") }
            let (alice, aliceEvents) = try restarting.webSocketClient("alice")
            try await alice.connect()
            try await aliceEvents.next("signed in") { if case .connected = $0 { true } else { false } }

            await restarting.server.running.shutdown()
            try await aliceEvents.next("the redirect") { $0 == .disconnected(.redirected(to: otherURL.description)) }
            try await aliceEvents.next("signed in on the other node") { if case .connected = $0 { true } else { false } }
            #expect(await alice.xmpp.connectedVia?.webSocketEndpoint == otherURL)
            try await alice.xmpp.ping()
            await alice.disconnect()
        } catch {
            await restarting.stop()
            await other.stop()
            throw error
        }
        await restarting.stop()
        await other.stop()
    }

    @Test func redirectsAreReadStrictlyAndNeverToLessSecurity() throws {
        #expect(ServerRedirect(seeOtherHost: "node2.example.org:5222") == .host("node2.example.org", port: 5222))
        #expect(ServerRedirect(seeOtherHost: " node2.example.org\n") == .host("node2.example.org", port: nil))
        #expect(ServerRedirect(seeOtherHost: "[2001:db8::2]:5222") == .host("2001:db8::2", port: 5222))
        #expect(ServerRedirect(seeOtherHost: "2001:db8::2") == .host("2001:db8::2", port: nil))
        for bad in ["", "node2:0", "node2:99999", "xmpp://node2", "[::1"] {
            #expect(ServerRedirect(seeOtherHost: bad) == nil, "\(bad)")
        }
        #expect(ServerRedirect(seeOtherURI: "https://node2.example.org/http-bind") == nil)

        var onTCP = ClientConfiguration(jid: try JID("alice@example.org"), password: "p")
        let toHost = try #require(ServerRedirect.host("node2.example.org", port: 5223).applied(to: onTCP))
        #expect(toHost.serverHost == "node2.example.org" && toHost.serverPort == 5223)
        onTCP.security = .directTLS
        #expect(ServerRedirect.host("node2.example.org", port: nil).applied(to: onTCP)?.serverPort == 5223)

        var onWSS = onTCP
        onWSS.webSocket = .endpoint(WebSocketURL("wss://example.org/xmpp-websocket")!)
        let down = try #require(ServerRedirect(seeOtherURI: "ws://node2.example.org/xmpp-websocket"))
        #expect(down.applied(to: onWSS) == nil, "wss:// to ws:// is refused (RFC 7395 §3.6.1)")
        let across = try #require(ServerRedirect(seeOtherURI: "wss://node2.example.org:5281/ws"))
        #expect(across.applied(to: onWSS)?.webSocketEndpoint == WebSocketURL("wss://node2.example.org:5281/ws"))
        #expect(ServerRedirect.host("node2.example.org", port: nil).applied(to: onWSS) == nil)
    }

    @Test func webSocketURLsAndHostMetaDocumentsParse() throws {
        let url = try #require(WebSocketURL("wss://Chat.example.org:5281/xmpp-websocket?x=1#frag"))
        #expect(url.isSecure && url.host == "Chat.example.org" && url.port == 5281 && url.path == "/xmpp-websocket?x=1")
        #expect(WebSocketURL("wss://example.org")?.port == 443)
        #expect(WebSocketURL("ws://[::1]:5280/ws")?.host == "::1")
        #expect(WebSocketURL("ws://[::1]:5280/ws")?.description == "ws://[::1]:5280/ws")
        for bad in ["https://example.org/ws", "wss://", "wss://user@example.org/", "wss://example.org:0/", "wss://example.org:x/"] {
            #expect(WebSocketURL(bad) == nil, "\(bad)")
        }
        let json = Array("""
            {"links":[{"rel":"urn:xmpp:alt-connections:xbosh","href":"https://example.org/http-bind"},
            {"rel":"urn:xmpp:alt-connections:websocket","href":"wss://example.org/xmpp-websocket"}]}
            """.utf8)
        #expect(HostMetaLookup.links(json: json) == ["wss://example.org/xmpp-websocket"])
        let xrd = Array("""
            <?xml version='1.0' encoding='utf-8'?>
            <XRD xmlns='http://docs.oasis-open.org/ns/xri/xrd-1.0'>
              <Link rel="urn:xmpp:alt-connections:xbosh" href="https://example.org/http-bind"/>
              <Link rel='urn:xmpp:alt-connections:websocket' href='wss://example.org/xmpp-websocket'/>
            </XRD>
            """.utf8)
        #expect(HostMetaLookup.links(xrd: xrd) == ["wss://example.org/xmpp-websocket"])
        // A DOCTYPE (entity tricks) is refused by the parser: no links, no file read.
        let hostile = Array("<!DOCTYPE x [<!ENTITY e SYSTEM 'file:///etc/passwd'>]><XRD><Link rel='urn:xmpp:alt-connections:websocket' href='&e;'/></XRD>".utf8)
        #expect(HostMetaLookup.links(xrd: hostile).isEmpty)
    }
}

/// The client against Prosody's mod_websocket (RFC 7395), with a peer on TCP.
@Suite(.sharedProsody) struct ProsodyWebSocketTests {
    @Test func theWholeStoryOverProsodysWebSocketWithAPeerOnTCP() async throws {
        let prosody = try SharedProsody.prosody
        let url = try #require(SharedProsody.webSocketURL.flatMap(WebSocketURL.init))
        try await loginRosterFriendRequestChatScenario(cacheDirectory: prosody.directory + "/clients-websocket") { username in
            var configuration = try prosody.configuration(for: username, password: SharedProsody.password(username))
            if username == "alice" { configuration.webSocket = .endpoint(url) }
            return configuration
        }
    }

    @Test func aDroppedWebSocketToProsodyReconnects() async throws {
        let url = try #require(SharedProsody.webSocketURL.flatMap(WebSocketURL.init))
        let prosody = try SharedProsody.prosody
        var configuration = try prosody.configuration(for: "carol", password: SharedProsody.password("carol"))
        configuration.webSocket = .endpoint(url)
        let client = try XMPPClient(configuration: configuration, logger: quietLogger("client.carol"))
        let events = EventRecorder(client.events)
        try await client.connect()
        try await events.next("signed in") { if case .connected = $0 { true } else { false } }
        await client.dropConnection()
        try await events.next("reconnecting") { if case .reconnecting = $0 { true } else { false } }
        try await events.next("signed in again") { if case .connected = $0 { true } else { false } }
        try await client.ping()
        await client.disconnect()
    }
}
