import Testing

@testable import ParleyServer

/// The `bosh:` section (XEP-0124/0206 on the HTTP service).
@Suite struct BOSHConfigurationTests {
    @Test func onByDefaultWithProsodysTermsAndConfigurable() async throws {
        let defaults = try await withConfigurationFile("domain: example.org\n") { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        #expect(defaults.http.bosh == HTTPConfiguration.BOSH())
        #expect(defaults.http.bosh.enabled && defaults.http.bosh.path == "/http-bind")
        #expect(defaults.http.bosh.maxHold == 1 && defaults.http.bosh.maxRequests == 2 && defaults.http.bosh.inactivity == .seconds(60))
        let yaml = """
            domain: example.org
            bosh:
              enabled: false
              path: /bosh
              max_wait: 30
              max_hold: 2
              max_requests: 3
              inactivity: 90
              max_pause: 300
              polling: 2
              max_body_size: 65536
              max_sessions: 500

            """
        let configured = try await withConfigurationFile(yaml) { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        var expected = HTTPConfiguration.BOSH()
        expected.enabled = false
        expected.path = "/bosh"
        expected.maxWait = .seconds(30)
        expected.maxHold = 2
        expected.maxRequests = 3
        expected.inactivity = .seconds(90)
        expected.maxPause = .seconds(300)
        expected.polling = .seconds(2)
        expected.maxBodyBytes = 65536
        expected.maxSessions = 500
        #expect(configured.http.bosh == expected)
    }

    @Test func badValuesAreRefusedWithTheirKey() async throws {
        for (yaml, key) in [
            ("bosh:\n  path: http-bind\n", "bosh.path"),
            ("bosh:\n  max_requests: 0\n", "bosh.max_requests"),
            ("bosh:\n  max_hold: 100\n", "bosh.max_hold"),
            ("bosh:\n  max_body_size: 0\n", "bosh.max_body_size"),
            ("bosh:\n  inactivity: -1\n", "bosh.inactivity"),
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
