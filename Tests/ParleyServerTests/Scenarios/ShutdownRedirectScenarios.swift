import Foundation
import NIOWebSocket
import ParleyCore
import Testing

@testable import ParleyServer

/// Rolling restarts (`shutdown.redirect_host`, `shutdown.redirect_websocket_uri`): a graceful
/// shutdown sends every client elsewhere instead of saying `<system-shutdown/>`, after the
/// sessions ended as on any shutdown (unacknowledged messages kept offline).
@Suite struct ShutdownRedirectScenarios {
    static let otherHost = "node2.example.org:5222"
    static let otherURI = "wss://node2.example.org/xmpp-websocket?a=1&b=2"

    @Test func tcpStreamsEndWithSeeOtherHostAndKeepWhatWasNotAcknowledged() async throws {
        try await TestServer.with({ $0.shutdown.redirectHost = Self.otherHost }) { server in
            let alice = try await server.connect()
            try await alice.authenticate("alice")
            _ = try await alice.bind(resource: "phone")
            try await alice.enableStreamManagement(resume: true)
            try await alice.send("<presence/>")
            _ = try await alice.expectIgnoringAckRequests("presence")
            let bob = try await server.login("bob")
            try await bob.send("<message to='alice@localhost' type='chat' id='m1'><body>before the restart</body></message>")
            let delivered = try await alice.expectIgnoringAckRequests("message")
            #expect(delivered.firstChild("body")?.text == "before the restart")
            // Never acknowledged by Alice: the shutdown keeps it for her.
            let unauthenticated = try await server.connect()
            try await unauthenticated.openStream()

            await server.running.shutdown()

            for client in [alice, unauthenticated] {
                let element = try await client.nextIgnoringAckRequests()
                let error = StreamError(element: element)
                #expect(error.condition == .seeOtherHost && error.otherHost == Self.otherHost)
                #expect(element.xmlString() == """
                    <error xmlns='http://etherx.jabber.org/streams'><see-other-host xmlns='urn:ietf:params:xml:ns:xmpp-streams'>\
                    node2.example.org:5222</see-other-host><text xmlns='urn:ietf:params:xml:ns:xmpp-streams' xml:lang='en'>\
                    The server is restarting; reconnect to node2.example.org:5222.</text></error>
                    """)
                try await client.expectStreamEnd()
            }
            _ = try await bob.expectStreamError(.seeOtherHost)

            // The node Alice comes back to (here the same data, restarted) has the message.
            try await server.restart()
            let again = try await server.login("alice")
            try await again.send("<presence/>")
            var offline = try await again.nextIgnoringAckRequests()
            while offline.name == "presence" { offline = try await again.nextIgnoringAckRequests() }
            #expect(offline.name == "message" && offline.firstChild("body")?.text == "before the restart", "\(offline.xmlString())")
        }
    }

    @Test func webSocketsEndWithCloseSeeOtherURIAndNoStreamError() async throws {
        try await WebSocketScenarios.with({
            $0.shutdown.redirectHost = Self.otherHost
            $0.shutdown.redirectWebSocketURI = Self.otherURI
        }) { server, port in
            let web = try await WebSocketTestClient.open(port: port)
            try await web.login("alice")
            let tcp = try await server.login("bob")
            await server.running.shutdown()
            try await web.xmpp.expectStreamEnd()
            // RFC 7395 §3.6.1: the <close/> names the endpoint; no <see-other-host/> on a WebSocket.
            #expect(web.frames.texts.last == "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing' see-other-uri='wss://node2.example.org/xmpp-websocket?a=1&amp;b=2'/>")
            #expect(!web.frames.texts.contains { $0.contains("stream:error") })
            #expect(web.frames.closeCodes == [.normalClosure])
            // TCP sessions of the same server still get the host.
            _ = try await tcp.expectStreamError(.seeOtherHost)
        }
    }

    @Test func aWebSocketWithoutAConfiguredURIGetsSystemShutdown() async throws {
        try await WebSocketScenarios.with({ $0.shutdown.redirectHost = Self.otherHost }) { server, port in
            let web = try await WebSocketTestClient.open(port: port)
            try await web.login("alice")
            await server.running.shutdown()
            try await web.expectStreamError(.systemShutdown)
            #expect(web.frames.texts.last == "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>")
        }
    }

    @Test func theRedirectOptionsAreReadAndCheckedAtStartUp() async throws {
        let yaml = """
            shutdown:
              redirect_host: "[2001:db8::2]:5222"
              redirect_websocket_uri: wss://node2.example.org:5281/xmpp-websocket

            """
        let configured = try await withConfigurationFile(yaml) { path in try await ServerConfiguration.load(file: path, environment: [:]) }
        #expect(configured.shutdown.redirectHost == "[2001:db8::2]:5222")
        #expect(configured.shutdown.redirectWebSocketURI == "wss://node2.example.org:5281/xmpp-websocket")
        let defaults = try await withConfigurationFile("domain: example.org\n") { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        #expect(defaults.shutdown.redirectHost == nil && defaults.shutdown.redirectWebSocketURI == nil)
        for (yaml, key) in [
            ("shutdown:\n  redirect_host: node2.example.org:99999\n", "shutdown.redirect_host"),
            ("shutdown:\n  redirect_host: xmpp://node2.example.org\n", "shutdown.redirect_host"),
            ("shutdown:\n  redirect_websocket_uri: https://node2.example.org/ws\n", "shutdown.redirect_websocket_uri"),
            ("shutdown:\n  redirect_websocket_uri: wss:///ws\n", "shutdown.redirect_websocket_uri"),
        ] {
            do {
                _ = try await withConfigurationFile(yaml) { path in try await ServerConfiguration.load(file: path, environment: [:]) }
                Issue.record("accepted \(yaml)")
            } catch let error as ConfigurationError {
                #expect(error.key == key, "\(error)")
                #expect(error.description.contains("expected"), "\(error)")
            }
        }
    }
}
