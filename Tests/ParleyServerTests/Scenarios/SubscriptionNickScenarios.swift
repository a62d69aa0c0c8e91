import ParleyCore
import ParleyTestSupport
import Testing

/// XEP-0172 §4.1: the nickname a user puts in a subscription request reaches the contact,
/// whether the contact is online then or gets the request re-delivered at a later login
/// (RFC 6121 §3.1.3).
@Suite struct SubscriptionNickScenarios {
    static let request = "<presence to='bob@localhost' type='subscribe'><nick xmlns='\(PEP.nick)'>Ally</nick></presence>"

    static func nick(_ presence: XMLElement) -> String? {
        presence.firstChild("nick", namespace: PEP.nick)?.text
    }

    @Test func theNickReachesAnOnlineContact() async throws {
        try await TestServer.with { server in
            let bob = try await server.im("bob")
            let alice = try await server.im("alice")
            try await alice.send(Self.request)
            let received = try await bob.expectPresence(from: "alice@localhost", type: "subscribe")
            try SchemaValidator.shared.validate(received.xmlString())
            #expect(Self.nick(received) == "Ally", "\(received.xmlString())")
        }
    }

    @Test func theNickComesWithTheRequestAtTheContactsNextLogin() async throws {
        try await TestServer.with { server in
            let alice = try await server.im("alice")
            try await alice.send(Self.request)
            _ = try await alice.sync()

            for login in 1...2 {
                let bob = try await server.im("bob", available: false)
                try await bob.send("<presence/>")
                let arrived = try await bob.nextElements(2)
                let request = try arrived.one("stored request") { $0.isPresence(from: "alice@localhost", type: "subscribe") }
                try SchemaValidator.shared.validate(request.xmlString())
                #expect(Self.nick(request) == "Ally", "login \(login): \(request.xmlString())")
                try await server.disconnect("bob", bob)
            }
        }
    }
}
