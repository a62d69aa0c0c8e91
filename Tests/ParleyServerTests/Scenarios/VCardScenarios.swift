import Foundation
import ParleyCore
@testable import ParleyServer
import ParleyStorage
import ParleyTestSupport
import Testing

/// XEP-0054 vcard-temp on the wire: one's own vCard (empty until set), another account's
/// (public), what may not be written, the size limit, and the photo hash kept with it.
@Suite struct VCardScenarios {
    static let namespace = "vcard-temp"
    /// "abc", whose SHA-1 is the FIPS 180 test vector.
    static let photo = "<PHOTO><TYPE>image/png</TYPE><BINVAL>YWJj</BINVAL></PHOTO>"
    static let vCard = "<vCard xmlns='vcard-temp'><FN>Alice Liddell</FN><NICKNAME>alice</NICKNAME>\(photo)</vCard>"

    static func get(_ client: TestClient, to: String? = nil, id: String = "vg") async throws -> XMLElement {
        let address = to.map { " to='\($0)'" } ?? ""
        let reply = try await client.query("<iq type='get' id='\(id)'\(address)><vCard xmlns='vcard-temp'/></iq>", id: id)
        // Inside an iq a payload is checked laxly; on its own its root must be declared.
        for payload in reply.elements where reply.type == "result" { try SchemaValidator.shared.validate(payload.xmlString()) }
        return reply
    }

    static func set(_ client: TestClient, _ vCard: String, to: String? = nil, id: String = "vs") async throws -> XMLElement {
        let address = to.map { " to='\($0)'" } ?? ""
        return try await client.query("<iq type='set' id='\(id)'\(address)>\(vCard)</iq>", id: id)
    }

    static func element(_ xml: String) throws -> XMLElement {
        try #require(ProfileXML.parse(xml), "not XML: \(xml)")
    }

    @Test func ownVCardIsEmptyUntilSetThenComesBackWhole() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let empty = try await Self.get(alice)
            #expect(empty.type == "result" && empty.elements == [XMLElement("vCard", namespace: Self.namespace)], "\(empty.xmlString())")

            let stored = try await Self.set(alice, Self.vCard)
            #expect(stored.type == "result" && stored.elements.isEmpty, "\(stored.xmlString())")
            let implicit = try await Self.get(alice)
            #expect(implicit.elements == [try Self.element(Self.vCard)], "\(implicit.xmlString())")
            let explicit = try await Self.get(alice, to: "alice@localhost")
            #expect(explicit.type == "result" && explicit.from == "alice@localhost")
            #expect(explicit.elements == [try Self.element(Self.vCard)])

            // A set addressed to one's own bare JID is one's own too; it replaces everything.
            let replacement = "<vCard xmlns='vcard-temp'><FN>Alice</FN></vCard>"
            #expect(try await Self.set(alice, replacement, to: "alice@localhost").type == "result")
            #expect(try await Self.get(alice).elements == [try Self.element(replacement)])
            // An empty vCard is stored as such.
            #expect(try await Self.set(alice, "<vCard xmlns='vcard-temp'/>").type == "result")
            #expect(try await Self.get(alice).elements == [XMLElement("vCard", namespace: Self.namespace)])
        }
    }

    @Test func anotherAccountsVCardIsPublicButNotWritable() async throws {
        try await TestServer.with(accounts: TestServer.threeAccounts) { server in
            let alice = try await server.login("alice")
            let bob = try await server.login("bob", resource: "r")
            #expect(try await Self.set(alice, Self.vCard).type == "result")

            let fetched = try await Self.get(bob, to: "alice@localhost")
            #expect(fetched.type == "result" && fetched.from == "alice@localhost" && fetched.to == "bob@localhost/r")
            #expect(fetched.elements == [try Self.element(Self.vCard)], "\(fetched.xmlString())")

            // No vCard and no account look alike: a vCard query does not reveal accounts.
            for jid in ["carol@localhost", "nobody@localhost"] {
                let missing = try await Self.get(bob, to: jid)
                #expect(missing.type == "error" && missing.stanzaErrorCondition == .itemNotFound, "\(missing.xmlString())")
                #expect(missing.from == jid)
            }

            let forbidden = try await Self.set(bob, "<vCard xmlns='vcard-temp'><FN>Mallory</FN></vCard>", to: "alice@localhost")
            #expect(forbidden.type == "error" && forbidden.stanzaErrorCondition == .forbidden, "\(forbidden.xmlString())")
            #expect(try await Self.get(bob, to: "alice@localhost").elements == [try Self.element(Self.vCard)], "unchanged")
        }
    }

    @Test func aVCardOverTheLimitIsRefusedAndTheOldOneKept() async throws {
        try await TestServer.with({ $0.vCard.maxBytes = 2_000 }) { server in
            let alice = try await server.login("alice")
            #expect(try await Self.set(alice, Self.vCard).type == "result")
            let big = "<vCard xmlns='vcard-temp'><DESC>\(String(repeating: "x", count: 2_000))</DESC></vCard>"
            let refused = try await Self.set(alice, big)
            #expect(refused.type == "error" && refused.stanzaErrorCondition == .notAcceptable, "\(refused.xmlString())")
            #expect(refused.stanzaErrorText?.contains("2000 bytes") == true, "\(refused.xmlString())")
            #expect(try await Self.get(alice).elements == [try Self.element(Self.vCard)])
            // Just under the limit is fine.
            let fits = "<vCard xmlns='vcard-temp'><DESC>\(String(repeating: "x", count: 1_900))</DESC></vCard>"
            #expect(try await Self.set(alice, fits).type == "result")
        }
    }

    @Test func thePhotoHashIsKeptWithTheVCardAndABrokenPhotoRefused() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            #expect(try await Self.set(alice, Self.vCard).type == "result")
            let stored = try await server.running.storage.vCard(of: "alice")
            #expect(stored?.photoHash == "a9993e364706816aba3e25717850c26c9cd0d89d")

            let broken = "<vCard xmlns='vcard-temp'><PHOTO><TYPE>image/png</TYPE><BINVAL>not*base64</BINVAL></PHOTO></vCard>"
            let refused = try await Self.set(alice, broken)
            #expect(refused.type == "error" && refused.stanzaErrorCondition == .badRequest, "\(refused.xmlString())")
            #expect(try await server.running.storage.vCard(of: "alice")?.photoHash == "a9993e364706816aba3e25717850c26c9cd0d89d")

            #expect(try await Self.set(alice, "<vCard xmlns='vcard-temp'><FN>No photo</FN></vCard>").type == "result")
            #expect(try await server.running.storage.vCard(of: "alice")?.photoHash == nil)
        }
    }

    @Test func theServerAdvertisesVCardsAndHasNoneOfItsOwn() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            let info = try await alice.query(
                "<iq type='get' id='d1' to='localhost'><query xmlns='\(ServerQueryScenarios.discoInfo)'/></iq>", id: "d1")
            let features = Set(
                info.firstChild("query", namespace: ServerQueryScenarios.discoInfo)?
                    .children("feature", namespace: ServerQueryScenarios.discoInfo).compactMap { $0[attribute: "var"] } ?? [])
            #expect(features.isSuperset(of: ["vcard-temp", "jabber:iq:private", "jabber:iq:last"]), "\(features)")
            let serverVCard = try await Self.get(alice, to: "localhost")
            #expect(serverVCard.type == "error" && serverVCard.stanzaErrorCondition == .itemNotFound)
            let serverSet = try await Self.set(alice, Self.vCard, to: "localhost")
            #expect(serverSet.type == "error" && serverSet.stanzaErrorCondition == .forbidden)
        }
    }

    /// A vCard written right after one with a photo is what comes back: the avatar mirror
    /// (XEP-0398) must not copy its own PEP echo of the first one over the second.
    @Test func aVCardWrittenRightAfterAPhotoIsKeptAsWritten() async throws {
        try await TestServer.with { server in
            let alice = try await server.login("alice")
            for round in 1...15 {
                // Each round a new photo, so each first write is published to PEP afresh.
                let bytes = Data("photo \(round)".utf8).base64EncodedString()
                let withPhoto = "<vCard xmlns='vcard-temp'><FN>\(round)</FN><PHOTO><TYPE>image/png</TYPE><BINVAL>\(bytes)</BINVAL></PHOTO></vCard>"
                let without = "<vCard xmlns='vcard-temp'><FN>only a name \(round)</FN></vCard>"
                // The second write follows the first one's answer at once: the mirror's
                // echoes of the first are still on their way.
                #expect(try await Self.set(alice, withPhoto, id: "a\(round)").type == "result")
                #expect(try await Self.set(alice, without, id: "b\(round)").type == "result")
                let reply = try await Self.get(alice, id: "g\(round)")
                #expect(reply.elements == [try Self.element(without)], "round \(round): \(reply.xmlString())")
            }
        }
    }
}
