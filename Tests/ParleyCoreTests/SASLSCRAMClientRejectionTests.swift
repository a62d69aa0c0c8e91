import Testing
@testable import ParleyCore

/// What the client does with a hostile or broken server, starting from the RFC 5802 example.
@Suite struct SASLSCRAMClientRejectionTests {
    static let example = SCRAMExample.rfc5802
    static let nonce = "fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j"

    func clientAfterFirst(acceptedIterations: ClosedRange<Int> = 1...1_000_000) throws -> SCRAMClient {
        var client = SCRAMClient(
            hash: .sha1, username: "user", password: "pencil", acceptedIterations: acceptedIterations,
            nonceGenerator: SCRAMNonce.fixed(Self.example.clientNonce))
        _ = try client.clientFirst()
        return client
    }

    func serverFirstError(_ message: String, acceptedIterations: ClosedRange<Int> = 1...1_000_000) throws
        -> SCRAMClientError?
    {
        var client = try clientAfterFirst(acceptedIterations: acceptedIterations)
        do {
            _ = try client.receiveServerFirst(bytes(message))
            return nil
        } catch {
            return error
        }
    }

    @Test func badServerSignatureIsDetected() throws {
        var client = try clientAfterFirst()
        _ = try client.receiveServerFirst(bytes(Self.example.serverFirst))
        var signature = try Base64.decode(Self.example.serverFinal.dropFirst(2))
        signature[19] ^= 0x80
        #expect(throws: SCRAMClientError.invalidServerSignature) {
            try client.receiveServerFinal(bytes("v=" + Base64.encode(signature)))
        }
        #expect(throws: SCRAMClientError.unexpectedMessage) { try client.receiveServerFinal([]) }
        #expect(!client.isAuthenticated)
        // After a failure nothing more is accepted, not even the right signature.
        #expect(throws: SCRAMClientError.unexpectedMessage) {
            try client.receiveServerFinal(bytes(Self.example.serverFinal))
        }
    }

    @Test func serverFinalErrorsAndGarbage() throws {
        for (message, expected) in [
            ("e=invalid-proof", SCRAMClientError.serverError("invalid-proof")),
            ("v=not base64", .malformedServerMessage("verifier is not valid base64")),
            ("x=1", .malformedServerMessage("server-final-message needs v= or e=")),
        ] {
            var client = try clientAfterFirst()
            _ = try client.receiveServerFirst(bytes(Self.example.serverFirst))
            #expect(throws: expected) { try client.receiveServerFinal(bytes(message)) }
        }
    }

    @Test func nonceMustExtendTheClientNonce() throws {
        #expect(try serverFirstError("r=someoneElse,s=QSXCR+Q6sek8bf92,i=4096") == .nonceMismatch)
        #expect(try serverFirstError("r=fyko+d2lbb,s=QSXCR+Q6sek8bf92,i=4096") == .nonceMismatch)
    }

    @Test func iterationCounts() throws {
        // Accepted however low (old servers), but reported.
        var client = try clientAfterFirst()
        _ = try client.receiveServerFirst(bytes("r=\(Self.nonce),s=QSXCR+Q6sek8bf92,i=1"))
        #expect(client.serverIterations == 1)
        #expect(
            try serverFirstError("r=\(Self.nonce),s=QSXCR+Q6sek8bf92,i=100", acceptedIterations: 4096...100_000)
                == .iterationCountOutOfRange(100))
        #expect(try serverFirstError("r=\(Self.nonce),s=QSXCR+Q6sek8bf92,i=2000000000") == .iterationCountOutOfRange(2_000_000_000))
        for bad in ["0", "-1", "04096", "4k", "", "99999999999999999999999"] {
            #expect(
                try serverFirstError("r=\(Self.nonce),s=QSXCR+Q6sek8bf92,i=\(bad)")
                    == .malformedServerMessage("invalid iteration count"))
        }
    }

    @Test func malformedServerFirst() throws {
        #expect(try serverFirstError("e=unknown-user") == .serverError("unknown-user"))
        #expect(try serverFirstError("m=x,r=\(Self.nonce),s=QSXCR+Q6sek8bf92,i=4096") == .unsupportedMandatoryExtension)
        #expect(try serverFirstError("r=\(Self.nonce),s=QSXCR+Q6sek8bf9,i=4096") == .malformedServerMessage("invalid salt"))
        #expect(try serverFirstError("r=\(Self.nonce),s=,i=4096") == .malformedServerMessage("invalid salt"))
        #expect(
            try serverFirstError("r=\(Self.nonce),i=4096,s=QSXCR+Q6sek8bf92")
                == .malformedServerMessage("server-first-message needs r=, s= and i="))
        #expect(
            try serverFirstError("garbage")
                == .malformedServerMessage("server-first-message is not an attribute list"))
        // Extensions after i= are ignored.
        #expect(try serverFirstError("r=\(Self.nonce),s=QSXCR+Q6sek8bf92,i=4096,x=y") == nil)
    }

    @Test func invalidInputsBeforeAnythingIsSent() {
        var badPassword = SCRAMClient(hash: .sha256, username: "u", password: "tab\u{0}")
        #expect(throws: SCRAMClientError.invalidPassword(.prohibitedCharacter("\u{0}"))) {
            try badPassword.clientFirst()
        }
        var noName = SCRAMClient(hash: .sha256, username: "", password: "p")
        #expect(throws: SCRAMClientError.invalidUsername) { try noName.clientFirst() }
        var emptyAuthzid = SCRAMClient(hash: .sha256, username: "u", password: "p", authzid: "")
        #expect(throws: SCRAMClientError.invalidAuthzid) { try emptyAuthzid.clientFirst() }
    }

    @Test func stepsOutOfOrder() throws {
        var client = SCRAMClient(hash: .sha1, username: "user", password: "pencil")
        #expect(throws: SCRAMClientError.unexpectedMessage) {
            try client.receiveServerFirst(bytes(Self.example.serverFirst))
        }
        var twice = try clientAfterFirst()
        #expect(throws: SCRAMClientError.unexpectedMessage) { try twice.clientFirst() }
    }
}
