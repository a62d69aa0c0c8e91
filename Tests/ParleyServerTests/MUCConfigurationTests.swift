import Testing

@testable import ParleyServer

/// The `muc:` options: defaults, read from the file and the environment, refused when they
/// make no sense.
@Suite struct MUCConfigurationTests {
    @Test func defaultsServeConferenceDotDomainToEveryLocalAccount() async throws {
        let config = try await withConfigurationFile("domain: example.org\n") { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        #expect(config.muc.enabled && config.mucDomain == "conference.example.org")
        #expect(config.muc.roomCreation == .local && config.muc.admins.isEmpty)
    }

    @Test func mucOptionsFromTheFileAndTheEnvironment() async throws {
        let yaml = """
            domain: example.org
            muc:
              domain: rooms.example.org
              room_creation: admins
              admins: [boss@example.org]
            """
        let config = try await withConfigurationFile(yaml) { path in
            try await ServerConfiguration.load(file: path, environment: ["PARLEYD_MUC_ENABLED": "false"])
        }
        #expect(!config.muc.enabled && config.mucDomain == "rooms.example.org")
        #expect(config.muc.roomCreation == .admins && config.muc.admins == ["boss@example.org"])
    }

    @Test func aDomainTakenByTheAccountsOrANonDomainIsRefused() async throws {
        for yaml in [
            "domain: example.org\nmuc:\n  domain: example.org\n",
            "domain: example.org\nmuc:\n  domain: room@example.org\n",
            "domain: example.org\nmuc:\n  admins: [example.org]\n",
            "domain: example.org\nmuc:\n  room_creation: everyone\n",
        ] {
            await #expect(throws: ConfigurationError.self, "\(yaml)") {
                try await withConfigurationFile(yaml) { path in
                    try await ServerConfiguration.load(file: path, environment: [:])
                }
            }
        }
    }
}
