@testable import ParleyServer
import Testing

/// The csi, contact_info and turn options: read from the file and the environment, and
/// refused with the key named when they cannot mean anything.
@Suite struct DiscoveryConfigurationTests {
    @Test func valuesFromTheFileAndTheEnvironment() async throws {
        let yaml = """
            csi:
              queue_size: 32
            contact_info:
              abuse: [mailto:abuse@example.org, xmpp:abuse@example.org]
            turn:
              host: turn.example.org
              secret: s3cret
              ttl: 600
              tcp: true
              tls_port: 5349
            """
        let config = try await withConfigurationFile(yaml) { path in
            try await ServerConfiguration.load(file: path, environment: ["PARLEYD_CONTACT_INFO_SUPPORT": "https://example.org/help"])
        }
        #expect(config.clientState.queueSize == 32)
        #expect(config.contactInfo.abuse == ["mailto:abuse@example.org", "xmpp:abuse@example.org"])
        #expect(config.contactInfo.support == ["https://example.org/help"])
        #expect(config.contactInfo.admin.isEmpty)
        #expect(config.turn.host == "turn.example.org" && config.turn.secret == "s3cret")
        #expect(config.turn.ttl == .seconds(600) && config.turn.tcp && config.turn.tlsPort == 5349 && config.turn.port == 3478)
    }

    @Test func theDefaultsAnnounceNothing() async throws {
        let config = try await ServerConfiguration.load(file: nil, environment: [:])
        #expect(config.contactInfo.isEmpty && config.turn.host == nil && config.turn.secret == nil)
        #expect(config.clientState.queueSize == 256)
    }

    @Test func meaninglessValuesAreRefused() async throws {
        for (yaml, expected) in [
            ("contact_info:\n  abuse: [abuse@example.org]\n", "contact_info.abuse: expected URIs such as mailto:… or xmpp:…, got \"abuse@example.org\""),
            ("turn:\n  secret: s3cret\n", "turn.secret: is set but turn.host is not"),
            ("turn:\n  port: 0\n", "turn.port: expected a port number from 1 to 65535, got 0"),
            ("csi:\n  queue_size: 0\n", "csi.queue_size: expected a positive integer, got 0"),
        ] {
            let message = try await withConfigurationFile(yaml) { path in
                do {
                    _ = try await ServerConfiguration.load(file: path, environment: [:])
                    return "loaded"
                } catch {
                    return String(describing: error)
                }
            }
            #expect(message == expected)
        }
    }
}
