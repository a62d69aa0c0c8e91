import Testing

@testable import ParleyServer

/// The `muc:` options of registration, nicknames and the groupchat rate: defaults, values
/// from the file, and nonsense refused.
@Suite struct MUCRolesConfigurationTests {
    @Test func defaultsAndValuesFromTheFile() async throws {
        let defaults = try await withConfigurationFile("domain: example.org\n") { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        #expect(defaults.muc.maxNickBytes == 128 && defaults.muc.registration == .open && !defaults.muc.enforceRegisteredNickname)
        #expect(defaults.muc.messagesPerMinute == 120 && defaults.muc.messageBurst == 10)
        let yaml = """
            domain: example.org
            muc:
              max_nick_bytes: 32
              registration: affiliated
              enforce_registered_nickname: true
              messages_per_minute: 30
              message_burst: 4
            """
        let config = try await withConfigurationFile(yaml) { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        #expect(config.muc.maxNickBytes == 32 && config.muc.registration == .affiliated && config.muc.enforceRegisteredNickname)
        #expect(config.muc.messagesPerMinute == 30 && config.muc.messageBurst == 4)
    }

    @Test func nonsenseIsRefused() async throws {
        for yaml in [
            "domain: example.org\nmuc:\n  max_nick_bytes: 0\n",
            "domain: example.org\nmuc:\n  max_nick_bytes: 5000\n",
            "domain: example.org\nmuc:\n  registration: everyone\n",
            "domain: example.org\nmuc:\n  messages_per_minute: 0\n",
            "domain: example.org\nmuc:\n  message_burst: -1\n",
        ] {
            await #expect(throws: ConfigurationError.self, "\(yaml)") {
                try await withConfigurationFile(yaml) { path in
                    try await ServerConfiguration.load(file: path, environment: [:])
                }
            }
        }
    }
}
