import Testing

@testable import ParleyServer

/// The `muc.archive_*` options: their defaults, read from the file, refused when negative.
@Suite struct MUCArchiveConfigurationTests {
    @Test func roomsArchiveByDefaultKeepingTenThousandMessagesForever() async throws {
        let config = try await withConfigurationFile("domain: example.org\n") { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        #expect(config.muc.archiveByDefault && config.muc.archiveMaxMessagesPerRoom == 10_000 && config.muc.archiveRetentionDays == 0)
    }

    @Test func archiveOptionsFromTheFileAndBadValuesRefused() async throws {
        let yaml = """
            domain: example.org
            muc:
              archive_by_default: false
              archive_max_messages_per_room: 0
              archive_retention_days: 30
            """
        let config = try await withConfigurationFile(yaml) { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        #expect(!config.muc.archiveByDefault && config.muc.archiveMaxMessagesPerRoom == 0 && config.muc.archiveRetentionDays == 30)
        for yaml in [
            "domain: example.org\nmuc:\n  archive_max_messages_per_room: -1\n",
            "domain: example.org\nmuc:\n  archive_retention_days: soon\n",
            "domain: example.org\nmuc:\n  archive_by_default: sometimes\n",
        ] {
            await #expect(throws: ConfigurationError.self, "\(yaml)") {
                try await withConfigurationFile(yaml) { path in
                    try await ServerConfiguration.load(file: path, environment: [:])
                }
            }
        }
    }
}
