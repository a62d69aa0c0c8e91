import Testing

@testable import ParleyServer

/// The `webchat:` section (the chat page ParleyHTTP serves).
@Suite struct WebChatConfigurationTests {
    @Test func onByDefaultAtChatAndConfigurable() async throws {
        let defaults = try await withConfigurationFile("domain: example.org\n") { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        #expect(defaults.http.webChat.enabled && defaults.http.webChat.path == "/chat")
        let configured = try await withConfigurationFile("domain: example.org\nwebchat:\n  enabled: false\n  path: /talk/\n") { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        #expect(!configured.http.webChat.enabled)
        // The trailing slash is the page's business; the setting names the directory.
        #expect(configured.http.webChat.path == "/talk")
    }

    @Test func aPathThatIsNotADirectoryOfItsOwnIsRefused() async throws {
        for yaml in [
            "webchat:\n  path: chat\n", "webchat:\n  path: /\n", "webchat:\n  path: /chat?x=1\n",
            "webchat:\n  path: /:file\n", "webchat:\n  path: /xmpp-websocket\n",
        ] {
            do {
                _ = try await withConfigurationFile(yaml) { path in
                    try await ServerConfiguration.load(file: path, environment: [:])
                }
                Issue.record("accepted \(yaml)")
            } catch let error as ConfigurationError {
                #expect(error.key == "webchat.path", "\(error)")
            }
        }
    }
}
