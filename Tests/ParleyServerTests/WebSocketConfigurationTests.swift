import Testing

@testable import ParleyServer

/// The `websocket:` section (RFC 7395 on the HTTP service).
@Suite struct WebSocketConfigurationTests {
    @Test func onByDefaultAtProsodysPathAndConfigurable() async throws {
        let defaults = try await withConfigurationFile("domain: example.org\n") { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        #expect(defaults.http.webSocket == HTTPConfiguration.WebSocket())
        #expect(defaults.http.webSocket.enabled && defaults.http.webSocket.path == "/xmpp-websocket")
        #expect(defaults.http.webSocket.allowedOrigins.isEmpty)
        let yaml = """
            domain: example.org
            websocket:
              enabled: false
              path: /ws
              max_message_size: 65536
              allowed_origins: [https://chat.example.org, https://web.example.org]

            """
        let configured = try await withConfigurationFile(yaml) { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        var expected = HTTPConfiguration.WebSocket()
        expected.enabled = false
        expected.path = "/ws"
        expected.maxMessageBytes = 65536
        expected.allowedOrigins = ["https://chat.example.org", "https://web.example.org"]
        #expect(configured.http.webSocket == expected)
    }

    @Test func aRelativePathOrAZeroSizeIsRefused() async throws {
        for (yaml, key) in [
            ("websocket:\n  path: xmpp-websocket\n", "websocket.path"),
            ("websocket:\n  path: /ws?x=1\n", "websocket.path"),
            ("websocket:\n  max_message_size: 0\n", "websocket.max_message_size"),
        ] {
            do {
                _ = try await withConfigurationFile(yaml) { path in
                    try await ServerConfiguration.load(file: path, environment: [:])
                }
                Issue.record("accepted \(yaml)")
            } catch let error as ConfigurationError {
                #expect(error.key == key, "\(error)")
            }
        }
    }
}
