import Foundation
@testable import ParleyServer
import Testing

/// The profile limits (`vcard`, `private_storage`) read from the file and the environment,
/// and refused when they could not work.
@Suite struct ProfileConfigurationTests {
    @Test func limitsComeFromTheFileAndTheEnvironmentWins() async throws {
        let yaml = "vcard:\n  max_bytes: 20000\nprivate_storage:\n  max_element_bytes: 3000\n  max_elements: 7\n"
        try await withConfigurationFile(yaml) { path in
            let fromFile = try await ServerConfiguration.load(file: path, environment: [:])
            #expect(fromFile.vCard.maxBytes == 20_000)
            #expect(fromFile.privateStorage.maxElementBytes == 3_000 && fromFile.privateStorage.maxElements == 7)
            let limits = ProfileService.Limits(fromFile)
            #expect(limits.maxVCardBytes == 20_000 && limits.maxPrivateElementBytes == 3_000 && limits.maxPrivateElements == 7)

            let overridden = try await ServerConfiguration.load(
                file: path, environment: ["PARLEYD_VCARD_MAX_BYTES": "40000", "PARLEYD_PRIVATE_STORAGE_MAX_ELEMENTS": "9"])
            #expect(overridden.vCard.maxBytes == 40_000 && overridden.privateStorage.maxElements == 9)
            #expect(overridden.privateStorage.maxElementBytes == 3_000)
        }
    }

    @Test func theDefaultsAreThoseDocumented() {
        let config = ServerConfiguration()
        #expect(config.vCard.maxBytes == 65_536)
        #expect(config.privateStorage.maxElementBytes == 65_536 && config.privateStorage.maxElements == 100)
    }

    @Test func aLimitOfZeroIsRefusedByName() async throws {
        for key in ["vcard.max_bytes", "private_storage.max_element_bytes", "private_storage.max_elements"] {
            let parts = key.split(separator: ".")
            let yaml = "\(parts[0]):\n  \(parts[1]): 0\n"
            try await withConfigurationFile(yaml) { path in
                do {
                    _ = try await ServerConfiguration.load(file: path, environment: [:])
                    Issue.record("\(key): 0 was accepted")
                } catch let error as ConfigurationError {
                    #expect(error.key == key, "\(error)")
                }
            }
        }
    }
}
