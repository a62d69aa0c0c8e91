import ParleyCore
import Testing

@testable import ParleyServer

/// What `NotifyInterests` keeps per resource: nothing for a client that announces no
/// capabilities (every idle session of such a client would otherwise hold an entry), and the
/// verified `ver` for one that does, even when it asks for no notifications.
@Suite struct NotifyInterestsTests {
    let alice = try! JID("alice@localhost/phone")

    @Test func aResourceWithoutCapabilitiesIsNotRecorded() {
        let interests = NotifyInterests()
        let new = interests.set([], for: alice, fresh: true)
        #expect(new.isEmpty)
        #expect(!interests.isKnown(alice))
        #expect(interests.nodes(of: alice).isEmpty)
        #expect(!interests.wants(alice, "urn:xmpp:avatar:metadata"))
        #expect(!interests.isSettled(alice, ver: "abc"))
    }

    @Test func capabilitiesWithoutNotifyNodesAreRecordedWithTheirVer() {
        let interests = NotifyInterests()
        interests.set([], for: alice, ver: "abc", fresh: true)
        #expect(interests.isKnown(alice))
        #expect(interests.isSettled(alice, ver: "abc"))
        #expect(!interests.isSettled(alice, ver: "other"))
    }

    @Test func anInitialPresenceWithoutCapabilitiesForgetsEarlierInterests() {
        let interests = NotifyInterests()
        let first = interests.set(["urn:xmpp:avatar:metadata"], for: alice, ver: "abc", fresh: true)
        #expect(first == ["urn:xmpp:avatar:metadata"])
        #expect(interests.wants(alice, "urn:xmpp:avatar:metadata"))
        interests.set([], for: alice, fresh: true)
        #expect(!interests.isKnown(alice))
        #expect(!interests.wants(alice, "urn:xmpp:avatar:metadata"))
        // Announcing them again counts them as new (their last items are sent again).
        #expect(interests.set(["urn:xmpp:avatar:metadata"], for: alice, ver: "abc", fresh: true) == ["urn:xmpp:avatar:metadata"])
    }
}
