import Testing

@testable import ParleyServer

/// The `pep:` options: read from the file, overridden by the environment, refused when
/// they make no sense.
@Suite struct PEPConfigurationTests {
    @Test func pepOptionsFromTheFileAndTheEnvironment() async throws {
        let yaml = """
            pep:
              max_items_per_node: 100
              max_payload_bytes: 4096
            """
        let config = try await withConfigurationFile(yaml) { path in
            try await ServerConfiguration.load(file: path, environment: ["PARLEYD_PEP_MAX_NODES_PER_ACCOUNT": "8"])
        }
        #expect(config.pep.enabled)
        #expect(config.pep.maxItemsPerNode == 100 && config.pep.maxPayloadBytes == 4096 && config.pep.maxNodesPerAccount == 8)
        let limits = PEPService.Limits(config.pep)
        #expect(limits.maxItemsPerNode == 100 && limits.maxPayloadBytes == 4096 && limits.maxNodesPerAccount == 8)
    }

    @Test func aZeroLimitIsRefused() async throws {
        await #expect(throws: ConfigurationError.self) {
            try await withConfigurationFile("pep:\n  max_items_per_node: 0\n") { path in
                try await ServerConfiguration.load(file: path, environment: [:])
            }
        }
    }
}
