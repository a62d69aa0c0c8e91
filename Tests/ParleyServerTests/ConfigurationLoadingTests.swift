import Foundation
import Logging
@testable import ParleyServer
import Testing

@Suite struct ConfigurationLoadingTests {
    @Test func withoutAFileEverythingIsTheSafeDefault() async throws {
        let config = try await ServerConfiguration.load(file: nil, environment: ["HOME": "/root", "PATH": "/bin"])
        #expect(config == ServerConfiguration())
        #expect(config.domain == "localhost")
        #expect(config.c2s.interfaces == ["127.0.0.1"])
        #expect(config.c2s.port == 5222 && config.c2s.directTLSPort == 5223)
        #expect(config.tls.required && !config.auth.allowPlainWithoutTLS && !config.registration.enabled)
        #expect(config.auth.mechanisms == [.scramSHA256, .scramSHA1, .plain])
        #expect(config.limits.maxStanzaBytes == 262_144 && config.limits.unauthenticatedTimeout == .seconds(30))
        #expect(config.keepalive.pingAfter == .seconds(120) && config.keepalive.idleTimeout == .seconds(300))
        #expect(config.sessions.onSameResource == .replace && config.sessions.maxPerAccount == 0)
        #expect(config.tlsCertificatePath == "./data/tls/localhost.crt")
        #expect(config.tlsKeyPath == "./data/tls/localhost.key")
        #expect(config.sqlitePath == "./data/parley.sqlite")
    }

    @Test func theCommittedConfigurationLoadsAndOnlyTurnsOnRegistrationAndHTTP() async throws {
        let config = try await ServerConfiguration.load(file: committedConfigurationPath, environment: [:])
        var expected = ServerConfiguration()
        expected.registration.enabled = true
        // So that `make run` gives a server where clients can send files.
        expected.http.enabled = true
        #expect(config == expected)
    }

    @Test func theCommittedConfigurationMentionsEveryOption() throws {
        let text = try String(contentsOfFile: committedConfigurationPath, encoding: .utf8)
        for key in ConfigurationSchema.options.keys {
            let name = key.split(separator: ".").last!
            #expect(text.contains("\(name):"), "conf/parleyd.yaml does not document \(key)")
        }
    }

    @Test func aFileWithOnlyCommentsMeansDefaults() async throws {
        let config = try await withConfigurationFile("# nothing yet\n") { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        #expect(config == ServerConfiguration())
    }

    @Test func fileValuesAndDerivedPaths() async throws {
        let yaml = """
            domain: Example.ORG
            data_dir: /var/lib/parley
            log_level: debug
            c2s:
              interfaces: [0.0.0.0, "::"]
              direct_tls_port: 0
            auth:
              mechanisms: [SCRAM-SHA-256]
            keepalive:
              whitespace_interval: 0
              ping_after: 2.5
            sessions:
              on_same_resource: reject
            storage:
              sqlite:
            """
        let config = try await withConfigurationFile(yaml) { path in
            try await ServerConfiguration.load(file: path, environment: [:])
        }
        #expect(config.domain == "example.org", "the domain is stored in canonical form")
        #expect(config.logLevel == .debug)
        #expect(config.c2s.interfaces == ["0.0.0.0", "::"] && config.c2s.directTLSPort == 0)
        #expect(config.auth.mechanisms == [.scramSHA256])
        #expect(config.keepalive.whitespaceInterval == nil && config.keepalive.pingAfter == .milliseconds(2500))
        #expect(config.sessions.onSameResource == .reject)
        #expect(config.tlsCertificatePath == "/var/lib/parley/tls/example.org.crt")
        #expect(config.sqlitePath == "/var/lib/parley/parley.sqlite")
    }

    @Test func theEnvironmentWinsOverTheFile() async throws {
        let yaml = """
            c2s:
              port: 5400
              interfaces: [127.0.0.1]
            limits:
              max_stanza_bytes: 100000
            registration:
              enabled: true
            """
        let environment = [
            "PARLEYD_C2S_PORT": "5300",
            "PARLEYD_LIMITS_MAX_STANZA_BYTES": "65536",
            "PARLEYD_C2S_INTERFACES": "0.0.0.0, ::",
            "PARLEYD_REGISTRATION_ENABLED": "false",
            "PARLEYD_STORAGE_SQLITE_PATH": "/tmp/p.sqlite",
            "PARLEYD_CONFIG": "/etc/parleyd.yaml",
        ]
        let config = try await withConfigurationFile(yaml) { path in
            try await ServerConfiguration.load(file: path, environment: environment)
        }
        #expect(config.c2s.port == 5300)
        #expect(config.limits.maxStanzaBytes == 65536)
        #expect(config.c2s.interfaces == ["0.0.0.0", "::"])
        #expect(config.registration.enabled == false)
        #expect(config.sqlitePath == "/tmp/p.sqlite")
    }
}
