import Testing

@testable import ParleyServer

/// `upload.domain`: where the XEP-0363 slot service lives, and the values refused for it.
@Suite struct UploadConfigurationTests {
    @Test func theSlotServiceDefaultsToUploadDotDomainAndCanBeMoved() async throws {
        let defaults = try await withConfigurationFile("domain: example.org\n") { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        #expect(defaults.uploadDomain == "upload.example.org")
        let moved = try await withConfigurationFile("domain: example.org\nupload:\n  domain: files.example.org\n") { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        #expect(moved.uploadDomain == "files.example.org")
    }

    @Test func theAccountsDomainOrANonDomainIsRefused() async throws {
        for yaml in [
            "domain: example.org\nupload:\n  domain: example.org\n",
            "domain: example.org\nupload:\n  domain: files@example.org\n",
        ] {
            await #expect(throws: ConfigurationError.self, "\(yaml)") {
                try await withConfigurationFile(yaml) { path in
                    try await ServerConfiguration.load(file: path, environment: [:])
                }
            }
        }
    }
}
