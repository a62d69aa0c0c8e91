import ParleyCore
import Testing

/// A server's long domains are one String for every JID that has them (a heap block each
/// otherwise); parsing and comparing are as before.
@Suite struct JIDSharedDomainTests {
    /// Where a native string's bytes are: the same for copies of one String.
    private func storage(_ string: String) -> UnsafeRawPointer? {
        var string = string
        return string.withUTF8 { UnsafeRawPointer($0.baseAddress) }
    }

    @Test func jidsWithASharedDomainShareItsString() throws {
        JID.shareDomain("Rooms.Shared-Domain.Example.")
        let parsed = try JID("room@rooms.shared-domain.example/nick")
        let prepared = try JID("Room@ROOMS.Shared-Domain.example./Nick")
        let built = try JID(localpart: "room", domainpart: "rooms.shared-domain.example")
        #expect(parsed.domainpart == "rooms.shared-domain.example")
        let expected = try JID("room@rooms.shared-domain.example/Nick")
        #expect(prepared == expected)
        let shared = storage(parsed.domainpart)
        #expect(shared != nil)
        #expect(storage(prepared.domainpart) == shared)
        #expect(storage(built.domainpart) == shared)
        let domain = try JID("rooms.shared-domain.example")
        #expect(storage(domain.domainpart) == shared)
        // Not shared: each parse has a copy of its own.
        let other = try JID("room@rooms.unshared-domain.example")
        let again = try JID("room@rooms.unshared-domain.example")
        #expect(storage(other.domainpart) != storage(again.domainpart))
    }

    @Test func theOtherPartsAreStillChecked() throws {
        JID.shareDomain("rooms.shared-domain.example")
        #expect(throws: JIDError.emptyPart(.localpart)) { try JID("@rooms.shared-domain.example") }
        #expect(throws: JIDError.emptyPart(.resourcepart)) { try JID("room@rooms.shared-domain.example/") }
        #expect(throws: JIDError.forbiddenCharacter(.localpart, " ")) { try JID("a room@rooms.shared-domain.example") }
        #expect(try JID("ROOM@rooms.shared-domain.example").localpart == "room")
    }

    @Test func invalidOrShortDomainsAreNotKept() throws {
        JID.shareDomain("not a domain")
        JID.shareDomain("short.example")
        #expect(throws: JIDError.self) { try JID("room@not a domain") }
        #expect(try JID("room@short.example").domainpart == "short.example")
    }
}
