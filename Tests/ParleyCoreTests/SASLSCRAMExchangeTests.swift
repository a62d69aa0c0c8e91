import Testing
@testable import ParleyCore

/// Runs a complete exchange between `SCRAMClient` and `SCRAMServer`, the way a c2s session
/// would, and returns the server's outcome (after the client has checked server-final).
func runSCRAM(
    hash: HashFunction, username: String, clientPassword: String, storedPassword: String, authzid: String? = nil
) throws -> SCRAMServer.Outcome {
    let credentials = try SCRAMCredentials.derive(password: storedPassword, hash: hash)
    var client = SCRAMClient(hash: hash, username: username, password: clientPassword, authzid: authzid)
    var server = SCRAMServer(hash: hash)
    let identity = try server.receiveClientFirst(try client.clientFirst())
    #expect(identity.username == username && identity.authzid == authzid)
    let clientFinal = try client.receiveServerFirst(try server.serverFirst(credentials: credentials))
    let outcome = try server.receiveClientFinal(clientFinal)
    try client.receiveServerFinal(outcome.serverFinal)
    #expect(client.isAuthenticated)
    return outcome
}

@Suite struct SASLSCRAMExchangeTests {
    @Test(arguments: HashFunction.allCases)
    func plainASCII(hash: HashFunction) throws {
        let outcome = try runSCRAM(hash: hash, username: "juliet", clientPassword: "r0m30", storedPassword: "r0m30")
        #expect(outcome.username == "juliet" && outcome.authzid == nil)
    }

    @Test(arguments: HashFunction.allCases)
    func usernameAndAuthzidNeedingEscapes(hash: HashFunction) throws {
        let outcome = try runSCRAM(
            hash: hash, username: "a,b=c,,==", clientPassword: "secret", storedPassword: "secret",
            authzid: "admin=1,x@example.com")
        #expect(outcome.username == "a,b=c,,==" && outcome.authzid == "admin=1,x@example.com")
    }

    @Test func escapingOnTheWire() throws {
        var client = SCRAMClient(
            hash: .sha256, username: "a,b=c", password: "p", authzid: "x=y,z", nonceGenerator: SCRAMNonce.fixed("abc"))
        #expect(text(try client.clientFirst()) == "n,a=x=3Dy=2Cz,n=a=2Cb=3Dc,r=abc")
    }

    @Test(arguments: HashFunction.allCases)
    func nonASCIIUsernameAndPassword(hash: HashFunction) throws {
        let outcome = try runSCRAM(
            hash: hash, username: "jérôme", clientPassword: "pässwörd 日本語 ✓", storedPassword: "pässwörd 日本語 ✓")
        #expect(outcome.username == "jérôme")
    }

    /// Client and server both SASLprep: a non-breaking space and a soft hyphen, or compatibility
    /// characters, still match what was stored.
    @Test(arguments: HashFunction.allCases)
    func passwordsEqualAfterSASLprep(hash: HashFunction) throws {
        _ = try runSCRAM(hash: hash, username: "u", clientPassword: "a\u{00A0}b\u{00AD}c", storedPassword: "a bc")
        _ = try runSCRAM(hash: hash, username: "u", clientPassword: "\u{2168}", storedPassword: "IX")
        _ = try runSCRAM(hash: hash, username: "u", clientPassword: "e\u{0301}", storedPassword: "\u{00E9}")
    }

    @Test(arguments: HashFunction.allCases)
    func wrongPasswordIsNotAuthorized(hash: HashFunction) {
        #expect(throws: SASLFailure.notAuthorized()) {
            try runSCRAM(hash: hash, username: "juliet", clientPassword: "romeo", storedPassword: "r0m30")
        }
    }

    /// An unknown user gets a well-formed challenge with a salt that is stable across attempts
    /// (as a real account's is) and fails only at the end, with the same condition as a wrong
    /// password.
    @Test(arguments: HashFunction.allCases)
    func unknownUserLooksLikeWrongPassword(hash: HashFunction) throws {
        let secret = try SecureRandom.bytes(32)
        var salts: [String] = []
        for _ in 0..<2 {
            var client = SCRAMClient(hash: hash, username: "nobody", password: "guess")
            var server = SCRAMServer(hash: hash)
            _ = try server.receiveClientFirst(try client.clientFirst())
            let serverFirst = try server.serverFirstForUnknownUser(serverSecret: secret, iterations: 4096)
            let fields = text(serverFirst).split(separator: ",")
            #expect(fields.count == 3 && fields[2] == "i=4096")
            salts.append(String(fields[1]))
            #expect(try Base64.decode(fields[1].dropFirst(2)).count == SCRAMCredentials.defaultSaltLength)
            let clientFinal = try client.receiveServerFirst(serverFirst)
            #expect(throws: SASLFailure.notAuthorized()) { try server.receiveClientFinal(clientFinal) }
        }
        #expect(salts[0] == salts[1])
        let other = try SCRAMCredentials.unknownUser(username: "other", serverSecret: secret, hash: hash)
        #expect("s=" + Base64.encode(other.salt) != salts[0])
    }

    @Test func credentialsForAnotherHashAreRefused() throws {
        var server = SCRAMServer(hash: .sha256)
        _ = try server.receiveClientFirst(bytes("n,,n=user,r=abc"))
        let sha1 = try SCRAMCredentials.derive(password: "p", hash: .sha1)
        #expect(throws: SASLFailure(.temporaryAuthFailure)) { try server.serverFirst(credentials: sha1) }
    }

    @Test func deriveDefaultsAndLimits() throws {
        let credentials = try SCRAMCredentials.derive(password: "p", hash: .sha256)
        #expect(credentials.iterations == 4096 && credentials.salt.count == 16)
        #expect(credentials.storedKey.count == 32 && credentials.serverKey.count == 32)
        let again = try SCRAMCredentials.derive(password: "p", hash: .sha256)
        #expect(again.salt != credentials.salt)
        #expect(throws: SCRAMCredentialsError.iterationCountTooLow(1000)) {
            try SCRAMCredentials.derive(password: "p", iterations: 1000, hash: .sha256)
        }
        #expect(throws: SCRAMCredentialsError.invalidPassword(.prohibitedCharacter("\u{7}"))) {
            try SCRAMCredentials.derive(password: "bell\u{7}", hash: .sha256)
        }
    }
}
