import ParleyCore
import Testing

@Suite struct JIDTests {
    @Test func parsesTheThreeParts() throws {
        let jid = try JID("juliet@example.com/balcony")
        #expect(jid.localpart == "juliet")
        #expect(jid.domainpart == "example.com")
        #expect(jid.resourcepart == "balcony")
        #expect(jid.description == "juliet@example.com/balcony")
        #expect(jid.bare.description == "juliet@example.com")
        #expect(jid.isFull && jid.bare.isBare && !jid.isDomain)
        #expect(try JID("example.com").isDomain)
    }

    @Test func resourceMayContainAtAndSlash() throws {
        let jid = try JID("juliet@example.com/foo@bar/baz")
        #expect(jid.localpart == "juliet")
        #expect(jid.resourcepart == "foo@bar/baz")
        let domainWithResource = try JID("example.com/a@b")
        #expect(domainWithResource.localpart == nil)
        #expect(domainWithResource.resourcepart == "a@b")
    }

    @Test func localpartAndDomainCompareCaseInsensitivelyResourceDoesNot() throws {
        #expect(try JID("Juliet@Example.COM/Balcony") == JID("juliet@example.com/Balcony"))
        #expect(try JID("juliet@example.com/Balcony") != JID("juliet@example.com/balcony"))
        #expect(try JID("ÄLICE@example.com").localpart == "älice")
    }

    @Test func unicodeIsNormalisedToNFC() throws {
        // "é" precomposed (U+00E9) and decomposed (e + U+0301) are the same JID.
        let composed = try JID("caf\u{E9}@example.com/r\u{E9}s")
        let decomposed = try JID("cafe\u{301}@example.com/re\u{301}s")
        #expect(composed == decomposed)
        #expect(composed.localpart?.unicodeScalars.count == 4)
    }

    @Test func fullwidthCharactersAreMappedInLocalparts() throws {
        #expect(try JID("\u{FF41}\u{FF42}\u{FF43}@example.com").localpart == "abc")
    }

    @Test func trailingDotOfDomainIsRemoved() throws {
        #expect(try JID("juliet@example.com.") == JID("juliet@example.com"))
    }

    @Test func ipLiteralsAreDomains() throws {
        #expect(try JID("a@[::1]").domainpart == "[::1]")
        #expect(try JID("a@127.0.0.1").domainpart == "127.0.0.1")
    }

    @Test(arguments: [
        ("", JIDError.emptyPart(.domainpart)),
        ("@example.com", .emptyPart(.localpart)),
        ("juliet@", .emptyPart(.domainpart)),
        ("juliet@example.com/", .emptyPart(.resourcepart)),
        ("jul\"iet@example.com", .forbiddenCharacter(.localpart, "\"")),
        ("jul:iet@example.com", .forbiddenCharacter(.localpart, ":")),
        ("jul iet@example.com", .forbiddenCharacter(.localpart, " ")),
        ("a<b@example.com", .forbiddenCharacter(.localpart, "<")),
        ("juliet@exa mple.com", .forbiddenCharacter(.domainpart, " ")),
        ("juliet@example.com/\u{7}bell", .forbiddenCharacter(.resourcepart, "\u{7}")),
        ("juliet@example..com", .invalidDomain("empty label")),
        ("juliet@-example.com", .invalidDomain("a label starts or ends with a hyphen")),
    ])
    func rejectsInvalidJIDsWithTypedError(input: String, expected: JIDError) {
        #expect(throws: expected) { try JID(input) }
    }

    @Test func enforcesByteLimitsPerPart() throws {
        let longest = String(repeating: "a", count: 1023)
        #expect(try JID("\(longest)@example.com/\(longest)").localpart?.utf8.count == 1023)
        #expect(throws: JIDError.partTooLong(.localpart, bytes: 1024)) {
            try JID(String(repeating: "a", count: 1024) + "@example.com")
        }
        #expect(throws: JIDError.partTooLong(.resourcepart, bytes: 1024)) {
            try JID("a@example.com/" + String(repeating: "é", count: 512))
        }
    }

    @Test func withResourceBuildsFullJID() throws {
        let full = try JID("romeo@example.net").with(resource: "orchard")
        #expect(full == (try JID("romeo@example.net/orchard")))
        #expect(throws: JIDError.emptyPart(.resourcepart)) { try JID("romeo@example.net").with(resource: "") }
    }

    @Test func hashableIdentityMatchesEquality() throws {
        let set: Set<JID> = [try JID("A@B.c/R"), try JID("a@b.c/R"), try JID("a@b.c/r")]
        #expect(set.count == 2)
    }
}
