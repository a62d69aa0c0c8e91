import ParleyCore
@testable import ParleyServer
import Testing

/// The set of a session's directed-presence recipients, which keeps one inline.
@Suite struct DirectedPresenceRecipientsTests {
    let room = try! JID("room@conference.localhost/alice")
    let bob = try! JID("bob@localhost/desk")
    let carol = try! JID("carol@localhost")

    @Test func empty() {
        let recipients = DirectedPresenceRecipients()
        #expect(recipients.isEmpty)
        #expect(recipients.count == 0)
        #expect(Array(recipients).isEmpty)
        #expect(!recipients.contains(room))
        #expect(recipients == [])
    }

    @Test func oneAndTheSameAgain() {
        var recipients = DirectedPresenceRecipients()
        recipients.insert(room)
        recipients.insert(try! JID("room@conference.localhost/alice"))
        #expect(!recipients.isEmpty)
        #expect(recipients.count == 1)
        #expect(Array(recipients) == [room])
        #expect(recipients.contains(room))
        #expect(!recipients.contains(bob))
        #expect(recipients == [room])
        #expect(recipients != [bob])
    }

    @Test func twoAndMany() {
        var recipients: DirectedPresenceRecipients = [room, bob]
        #expect(recipients.count == 2)
        #expect(Set(recipients) == [room, bob])
        recipients.insert(carol)
        recipients.insert(bob)
        #expect(recipients.count == 3)
        #expect(Set(recipients) == [room, bob, carol])
        #expect(recipients.contains(carol))
        // Equality is a set's: the order of insertion does not matter.
        #expect(recipients == DirectedPresenceRecipients([carol, bob, room]))
        #expect(recipients != [room, bob])
    }

    @Test func removal() {
        var recipients: DirectedPresenceRecipients = [room, bob, carol]
        recipients.remove(bob)
        #expect(Set(recipients) == [room, carol])
        recipients.remove(bob)
        #expect(recipients.count == 2)
        recipients.remove(room)
        #expect(Array(recipients) == [carol])
        #expect(recipients == [carol])
        recipients.remove(room)
        #expect(recipients.count == 1)
        recipients.remove(carol)
        #expect(recipients.isEmpty)
        recipients.remove(carol)
        #expect(recipients.isEmpty)
        recipients.insert(bob)
        #expect(Array(recipients) == [bob])
    }

    @Test func filteredAndMappedAsASequence() {
        let recipients: DirectedPresenceRecipients = [room, bob, carol]
        #expect(Set(recipients.filter { $0.domainpart == "localhost" }) == [bob, carol])
        #expect(recipients.map(\.description).sorted() == ["bob@localhost/desk", "carol@localhost", "room@conference.localhost/alice"])
    }
}
