import Testing
@testable import ParleyCore

@Suite struct SASLPLAINTests {
    func parse(_ message: [UInt8]) -> Result<PLAINMessage, SASLFailure> {
        Result { () throws(SASLFailure) in try PLAINMessage(parsing: message) }
    }

    @Test func parsesWithAndWithoutAuthzid() throws {
        #expect(
            try PLAINMessage(parsing: bytes("\u{0}juliet\u{0}r0m30"))
                == PLAINMessage(authzid: nil, authcid: "juliet", password: "r0m30"))
        #expect(
            try PLAINMessage(parsing: bytes("admin@example.com\u{0}juliet\u{0}pass word"))
                == PLAINMessage(authzid: "admin@example.com", authcid: "juliet", password: "pass word"))
        let unicode = try PLAINMessage(parsing: bytes("\u{0}jérôme\u{0}日本語"))
        #expect(unicode.authcid == "jérôme" && unicode.password == "日本語")
    }

    @Test(arguments: [
        ("juliet\u{0}r0m30", "one separator"),
        ("\u{0}juliet\u{0}r0m\u{0}30", "three separators"),
        ("\u{0}\u{0}r0m30", "empty authcid"),
        ("\u{0}juliet\u{0}", "empty password"),
        ("", "empty message"),
        ("\u{0}\u{0}", "nothing but separators"),
    ])
    func malformed(message: String, reason: String) {
        guard case .failure(let failure) = parse(bytes(message)) else {
            Issue.record("accepted: \(reason)")
            return
        }
        #expect(failure.condition == .malformedRequest, "\(reason)")
    }

    @Test func rejectsInvalidUTF8() {
        guard case .failure(let failure) = parse([0] + bytes("juliet") + [0, 0xC3, 0x28]) else {
            Issue.record("accepted invalid UTF-8")
            return
        }
        #expect(failure.condition == .malformedRequest)
    }

    @Test func lengthLimits() throws {
        let long255 = String(repeating: "a", count: 255)
        #expect(try PLAINMessage(parsing: bytes("\(long255)\u{0}\(long255)\u{0}\(long255)")).password == long255)
        let tooLong = String(repeating: "a", count: PLAINMessage.maximumFieldLength + 1)
        #expect(throws: SASLFailure.self) { try PLAINMessage(parsing: bytes("\u{0}juliet\u{0}\(tooLong)")) }
        #expect(throws: SASLFailure.self) { try PLAINMessage(parsing: bytes("\u{0}\(tooLong)\u{0}p")) }
    }

    @Test func encodeRoundTrips() throws {
        for message in [
            PLAINMessage(authcid: "juliet", password: "r0m30"),
            PLAINMessage(authzid: "romeo", authcid: "juliet", password: "pässwörd"),
        ] {
            #expect(try PLAINMessage(parsing: message.encoded()) == message)
        }
        #expect(try PLAINMessage(authcid: "u", password: "p").encoded() == [0, 0x75, 0, 0x70])
    }

    @Test func encodeRefusesWhatServersReject() {
        #expect(throws: SASLFailure.self) { try PLAINMessage(authcid: "", password: "p").encoded() }
        #expect(throws: SASLFailure.self) { try PLAINMessage(authcid: "u", password: "").encoded() }
        #expect(throws: SASLFailure.self) { try PLAINMessage(authcid: "u", password: "a\u{0}b").encoded() }
        #expect(throws: SASLFailure.self) { try PLAINMessage(authzid: "", authcid: "u", password: "p").encoded() }
    }

    @Test(arguments: HashFunction.allCases)
    func verifiesAgainstSCRAMCredentials(hash: HashFunction) throws {
        let stored = try SCRAMCredentials.derive(password: "pässwörd", hash: hash)
        try PLAINMessage(authcid: "juliet", password: "pässwörd").verify(against: stored)
        // SASLprep on the server side: a compatibility-equivalent form matches too.
        let nfd = try SCRAMCredentials.derive(password: "e\u{0301}", hash: hash)
        try PLAINMessage(authcid: "juliet", password: "\u{00E9}").verify(against: nfd)
        #expect(throws: SASLFailure.notAuthorized()) {
            try PLAINMessage(authcid: "juliet", password: "passwörd").verify(against: stored)
        }
        #expect(throws: SASLFailure.notAuthorized()) {
            try PLAINMessage(authcid: "juliet", password: "bell\u{7}").verify(against: stored)
        }
    }

    @Test func unknownUserStandInNeverVerifies() throws {
        let standIn = try SCRAMCredentials.unknownUser(
            username: "nobody", serverSecret: SecureRandom.bytes(32), hash: .sha256)
        #expect(throws: SASLFailure.notAuthorized()) {
            try PLAINMessage(authcid: "nobody", password: "").verify(against: standIn)
        }
    }
}
