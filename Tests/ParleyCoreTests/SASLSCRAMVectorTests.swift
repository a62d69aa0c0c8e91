import Testing
@testable import ParleyCore

/// The worked examples of RFC 5802 §5 (SCRAM-SHA-1) and RFC 7677 §3 (SCRAM-SHA-256), replayed
/// through both the client and the server with the RFCs' nonces injected.
struct SCRAMExample: Sendable, CustomTestStringConvertible {
    var hash: HashFunction
    var clientNonce: String
    var serverNonce: String
    var salt: String
    var clientFirst: String
    var serverFirst: String
    var clientFinal: String
    var serverFinal: String

    var testDescription: String { "SCRAM-\(hash.rawValue)" }

    static let rfc5802 = SCRAMExample(
        hash: .sha1, clientNonce: "fyko+d2lbbFgONRv9qkxdawL", serverNonce: "3rfcNHYJY1ZVvWVs7j",
        salt: "QSXCR+Q6sek8bf92",
        clientFirst: "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
        serverFirst: "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
        clientFinal: "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
        serverFinal: "v=rmF9pqV8S7suAoZWja4dJRkFsKQ=")

    static let rfc7677 = SCRAMExample(
        hash: .sha256, clientNonce: "rOprNGfwEbeRWgbNEkqO", serverNonce: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
        salt: "W22ZaJ0SNY7soEsUEjb6gQ==",
        clientFirst: "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
        serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        clientFinal:
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")

    func credentials() throws -> SCRAMCredentials {
        try SCRAMCredentials.derive(password: "pencil", salt: Base64.decode(salt), iterations: 4096, hash: hash)
    }
}

@Suite struct SASLSCRAMVectorTests {
    @Test(arguments: [SCRAMExample.rfc5802, .rfc7677])
    func clientProducesTheRFCMessages(example: SCRAMExample) throws {
        var client = SCRAMClient(
            hash: example.hash, username: "user", password: "pencil",
            nonceGenerator: SCRAMNonce.fixed(example.clientNonce))
        #expect(text(try client.clientFirst()) == example.clientFirst)
        #expect(text(try client.receiveServerFirst(bytes(example.serverFirst))) == example.clientFinal)
        #expect(client.serverIterations == 4096)
        #expect(!client.isAuthenticated)
        try client.receiveServerFinal(bytes(example.serverFinal))
        #expect(client.isAuthenticated)
    }

    @Test(arguments: [SCRAMExample.rfc5802, .rfc7677])
    func serverProducesTheRFCMessages(example: SCRAMExample) throws {
        var server = SCRAMServer(hash: example.hash, nonceGenerator: SCRAMNonce.fixed(example.serverNonce))
        let identity = try server.receiveClientFirst(bytes(example.clientFirst))
        #expect(identity == SCRAMServer.ClientFirst(username: "user", authzid: nil))
        #expect(text(try server.serverFirst(credentials: example.credentials())) == example.serverFirst)
        let outcome = try server.receiveClientFinal(bytes(example.clientFinal))
        #expect(text(outcome.serverFinal) == example.serverFinal)
        #expect(outcome.username == "user" && outcome.authzid == nil)
    }

    @Test func derivedKeysMatchRFC5802() throws {
        // StoredKey and ServerKey for "pencil", computed independently from the RFC's
        // intermediate values: ClientKey = HMAC(SaltedPassword, "Client Key") etc.
        let credentials = try SCRAMExample.rfc5802.credentials()
        let salted = try HashFunction.sha1.pbkdf2(
            password: bytes("pencil"), salt: Base64.decode("QSXCR+Q6sek8bf92"), iterations: 4096)
        let clientKey = try HashFunction.sha1.hmac(key: salted, data: bytes("Client Key"))
        #expect(credentials.storedKey == (try HashFunction.sha1.digest(clientKey)))
        #expect(credentials.serverKey == (try HashFunction.sha1.hmac(key: salted, data: bytes("Server Key"))))
        #expect(credentials.salt.count == 12 && credentials.iterations == 4096)
    }
}
