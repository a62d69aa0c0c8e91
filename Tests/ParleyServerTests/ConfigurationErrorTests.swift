@testable import ParleyServer
import Testing

/// Each refused configuration names the key and the reason in one line.
@Suite struct ConfigurationErrorTests {
    func error(yaml: String, environment: [String: String] = [:]) async throws -> String {
        try await withConfigurationFile(yaml) { path in
            do {
                _ = try await ServerConfiguration.load(file: path, environment: environment)
                Issue.record("loaded without error")
                return ""
            } catch {
                let message = String(describing: error)
                #expect(error is ConfigurationError)
                #expect(!message.contains("\n"))
                return message
            }
        }
    }

    @Test func unknownKeySuggestsTheNearestOption() async throws {
        #expect(try await error(yaml: "c2s:\n  prot: 5222\n") == "c2s.prot: unknown option (did you mean c2s.port?)")
        #expect(try await error(yaml: "limit:\n  max_depth: 3\n") == "limit: unknown option (did you mean limits?)")
        #expect(try await error(yaml: "colour: blue\n") == "colour: unknown option")
    }

    @Test func unknownEnvironmentVariable() async throws {
        #expect(
            try await error(yaml: "", environment: ["PARLEYD_C2S_PROT": "1"])
                == "PARLEYD_C2S_PROT: unknown environment variable (did you mean PARLEYD_C2S_PORT?)")
    }

    @Test func wrongType() async throws {
        #expect(
            try await error(yaml: "limits:\n  max_stanza_bytes: abc\n")
                == #"limits.max_stanza_bytes: expected an integer of at least 10000 (RFC 6120 §13.12), got "abc""#)
        #expect(
            try await error(yaml: "", environment: ["PARLEYD_LIMITS_MAX_DEPTH": "abc"])
                == #"limits.max_depth (PARLEYD_LIMITS_MAX_DEPTH): expected a positive integer, got "abc""#)
        #expect(
            try await error(yaml: "c2s:\n  port: \"5222\"\n")
                == #"c2s.port: expected a port number from 0 (any free port) to 65535, got "5222" (write it without quotes)"#)
        #expect(try await error(yaml: "tls:\n  required: maybe\n") == #"tls.required: expected true or false, got "maybe""#)
        #expect(
            try await error(yaml: "c2s:\n  interfaces: 0.0.0.0\n")
                == #"c2s.interfaces: expected a list such as [a, b], got "0.0.0.0""#)
        #expect(try await error(yaml: "c2s:\n  port: [1, 2]\n") == "c2s.port: expected a single value, got a list")
        #expect(try await error(yaml: "c2s: 5222\n") == #"c2s: expected a section of options, got "5222""#)
        #expect(
            try await error(yaml: "c2s:\n  port:\n")
                == "c2s.port: no value given (delete the line to use the default)")
    }

    @Test func badEnumValue() async throws {
        #expect(
            try await error(yaml: "log_level: loud\n")
                == #"log_level: expected one of trace, debug, info, notice, warning, error, critical, got "loud""#)
        #expect(
            try await error(yaml: "sessions:\n  on_same_resource: kick\n")
                == #"sessions.on_same_resource: expected one of replace, reject, got "kick""#)
        #expect(
            try await error(yaml: "auth:\n  mechanisms: [SCRAM-SHA-256, DIGEST-MD5]\n")
                == #"auth.mechanisms: expected items from SCRAM-SHA-256, SCRAM-SHA-1, PLAIN, got "DIGEST-MD5""#)
    }

    @Test func outOfRange() async throws {
        #expect(
            try await error(yaml: "c2s:\n  port: 70000\n")
                == "c2s.port: expected a port number from 0 (any free port) to 65535, got 70000")
        #expect(try await error(yaml: "limits:\n  max_depth: 0\n") == "limits.max_depth: expected a positive integer, got 0")
        #expect(
            try await error(yaml: "auth:\n  scram_iterations: 1000\n")
                == "auth.scram_iterations: expected an integer from 4096 to 1000000, got 1000")
        #expect(
            try await error(yaml: "limits:\n  unauthenticated_timeout: -1\n")
                == #"limits.unauthenticated_timeout: expected a positive number of seconds up to 86400, got "-1""#)
    }

    @Test func contradictionsAndOtherRefusals() async throws {
        #expect(
            try await error(yaml: "keepalive:\n  ping_after: 300\n  idle_timeout: 300\n")
                == "keepalive.ping_after: must be shorter than keepalive.idle_timeout (300.0 seconds)")
        #expect(
            try await error(yaml: "c2s:\n  port: 5223\n")
                == "c2s.direct_tls_port: is the same as c2s.port (5223)")
        // Yams refuses duplicate keys itself; the message names the file and the key.
        let twice = try await error(yaml: "c2s:\n  port: 1\n  port: 2\n")
        #expect(twice.contains("parleyd.yaml: not valid YAML: ") && twice.contains("'port'"))
        #expect(try await error(yaml: "domain: \"a b\"\n").hasPrefix("domain: not a valid XMPP domain"))
    }

    @Test func aMissingFileThatWasNamedIsAnError() async throws {
        await #expect(throws: ConfigurationError(key: "/nonexistent/parleyd.yaml", reason: "no such file")) {
            try await ServerConfiguration.load(file: "/nonexistent/parleyd.yaml", environment: [:])
        }
    }
}
