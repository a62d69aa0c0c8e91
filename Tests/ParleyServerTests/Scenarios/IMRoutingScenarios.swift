import ParleyCore
import Testing

/// RFC 6121 §8.5 on the wire: which of an account's resources a stanza reaches, and what a
/// sender hears back when there is none.
@Suite struct IMRoutingScenarios {
    /// §8.5.2.1.1: a chat or normal message to the bare JID goes to the available resources
    /// of highest (non-negative) priority, all of them if several share it.
    @Test func aBareJIDMessageGoesToTheHighestPriorityResources() async throws {
        try await TestServer.with { server in
            let clients = try await server.resources("alice", [("high", 5), ("alsohigh", 5), ("low", 1)])
            let (high, alsoHigh, low) = (clients[0], clients[1], clients[2])
            let bound = try await server.login("alice", resource: "bound")  // never available
            let bob = try await server.login("bob", resource: "r")
            for type in ["chat", "normal"] {
                try await bob.sendMessage(to: "alice@localhost", id: type, type: type)
                let first = try await high.expectMessage(id: type)
                #expect(first.from == "bob@localhost/r" && first.to == "alice@localhost")
                try await alsoHigh.expectMessage(id: type)
            }
            try await bob.sync()
            try await low.expectNothingPending()
            try await bound.expectNothingPending()
            try await bob.expectNothingPending()
        }
    }

    /// §8.5.2.1.1: a resource with negative priority never gets bare-JID messages; with
    /// no other resource they go to offline storage.
    @Test func aNegativePriorityResourceGetsNoBareJIDMessages() async throws {
        try await TestServer.with { server in
            let shy = try await server.im("alice", "shy", priority: -1)
            let bob = try await server.login("bob", resource: "r")
            try await bob.sendMessage(to: "alice@localhost", id: "m1")
            try await bob.expectNothingPending("stored, not refused")
            try await shy.expectNothingPending()
            // To its full JID it is delivered.
            try await bob.sendMessage(to: "alice@localhost/shy", id: "m2")
            try await shy.expectMessage(id: "m2")
            let later = try await server.im("alice", "later")
            try await later.expectPresence(from: "alice@localhost/shy")
            let stored = try await later.expectMessage(id: "m1")
            #expect(stored.firstChild("delay", namespace: IM.delay) != nil)
            try await shy.expectPresence(from: "alice@localhost/later")
            try await shy.expectNothingPending()
        }
    }

    /// §8.5.2.1.1: a headline to the bare JID goes to every available resource with
    /// non-negative priority; none is stored when nobody is available.
    @Test func aHeadlineGoesToEveryNonNegativeResource() async throws {
        try await TestServer.with { server in
            let clients = try await server.resources("alice", [("a", 5), ("b", 0), ("c", -1)])
            let (a, b, c) = (clients[0], clients[1], clients[2])
            let bob = try await server.login("bob", resource: "r")
            try await bob.sendMessage(to: "alice@localhost", id: "h1", type: "headline")
            try await a.expectMessage(id: "h1")
            try await b.expectMessage(id: "h1")
            try await c.expectNothingPending()
            try await server.disconnect("alice", a, b, c)
            try await bob.sendMessage(to: "alice@localhost", id: "h2", type: "headline")
            try await bob.expectNothingPending("a headline for nobody is dropped silently")
            try await server.im("alice", "d").expectNothingPending("and not stored")
        }
    }

    @Test func aGroupchatMessageToABareOrMissingFullJIDIsServiceUnavailable() async throws {
        try await TestServer.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.login("bob", resource: "r")
            for (id, to) in [("g1", "alice@localhost"), ("g2", "alice@localhost/nothere")] {
                try await bob.sendMessage(to: to, id: id, type: "groupchat")
                let error = try await bob.expect("message")
                #expect(error.type == "error" && error.id == id && error.stanzaErrorCondition == .serviceUnavailable)
            }
            try await alice.expectNothingPending()
        }
    }

    /// §8.5.3.2.1: a message to a full JID with no such resource is handled as if to the
    /// bare JID: the highest-priority resource gets it, or offline storage.
    @Test func aMessageToAMissingResourceFollowsTheBareJIDRules() async throws {
        try await TestServer.with { server in
            let clients = try await server.resources("alice", [("high", 7), ("low", 2)])
            let (high, low) = (clients[0], clients[1])
            let bob = try await server.login("bob", resource: "r")
            try await bob.sendMessage(to: "alice@localhost/gone", id: "m1")
            #expect(try await high.expectMessage(id: "m1").to == "alice@localhost/gone")
            try await low.expectNothingPending()
            try await server.disconnect("alice", high, low)
            try await bob.sendMessage(to: "alice@localhost/gone", id: "m2")
            try await bob.expectNothingPending()
            try await server.im("alice", "back").expectMessage(id: "m2")
        }
    }

    /// §8.5.3.2.1: only a chat message to a missing resource stands for the bare JID; a
    /// normal one is refused, a headline or an error reaches no one and nothing comes back.
    @Test func otherMessagesToAMissingResourceReachNoOtherResource() async throws {
        try await TestServer.with { server in
            let clients = try await server.resources("alice", [("high", 7), ("low", 0)])
            let (high, low) = (clients[0], clients[1])
            let bob = try await server.login("bob", resource: "r")
            try await bob.sendMessage(to: "alice@localhost/gone", id: "n1", type: "normal")
            let refused = try await bob.expect("message")
            #expect(refused.type == "error" && refused.id == "n1" && refused.stanzaErrorCondition == .serviceUnavailable, "\(refused.xmlString())")
            try await bob.send("<message to='alice@localhost/gone' id='n2'><body>no type is normal</body></message>")
            #expect(try await bob.expect("message").stanzaErrorCondition == .serviceUnavailable)
            try await bob.sendMessage(to: "alice@localhost/gone", id: "h1", type: "headline")
            let error = "<error type='cancel'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error>"
            try await bob.send("<message type='error' to='alice@localhost/gone' id='e1'>\(error)</message>")
            try await bob.sync()
            try await bob.expectNothingPending()
            for client in [high, low] { try await client.expectNothingPending() }
        }
    }

    /// §8.5.2.1.1: an error message to a bare JID is ignored, whoever is online.
    @Test func anErrorMessageToABareJIDReachesNoResource() async throws {
        try await TestServer.with { server in
            let clients = try await server.resources("alice", [("high", 7), ("zero", 0)])
            let bob = try await server.login("bob", resource: "r")
            let error = "<error type='cancel'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error>"
            try await bob.send("<message type='error' to='alice@localhost' id='e1'>\(error)</message>")
            try await bob.sync()
            try await bob.expectNothingPending()
            for client in clients { try await client.expectNothingPending() }
        }
    }

    /// RFC 6120 §8.3.1: an error is never answered with an error, and an error message for
    /// an offline account is not stored.
    @Test func errorMessagesAreNeverBouncedNorStored() async throws {
        try await TestServer.with { server in
            let bob = try await server.login("bob", resource: "r")
            let error = "<error type='cancel'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error>"
            try await bob.send("<message type='error' to='alice@localhost' id='e1'>\(error)</message>")
            try await bob.send("<message type='error' to='alice@localhost/x' id='e2'>\(error)</message>")
            try await bob.send("<message type='error' to='nobody@localhost' id='e3'>\(error)</message>")
            try await bob.expectNothingPending()
            try await server.im("alice").expectNothingPending("error messages are not stored")
        }
    }

    /// §8.5.1: no such account. Messages and iqs get service-unavailable, presence of every
    /// type is dropped: a subscription request stays pending, with nothing back.
    @Test func stanzasToANonexistentAccount() async throws {
        try await TestServer.with { server in
            let alice = try await server.im("alice")
            try await alice.sendMessage(to: "nobody@localhost", id: "m1")
            let messageError = try await alice.expect("message")
            #expect(messageError.type == "error" && messageError.id == "m1" && messageError.stanzaErrorCondition == .serviceUnavailable)
            try await alice.sendMessage(to: "nobody@localhost/res", id: "m2")
            #expect(try await alice.expect("message").stanzaErrorCondition == .serviceUnavailable)
            for (id, to) in [("q1", "nobody@localhost"), ("q2", "nobody@localhost/res")] {
                let reply = try await alice.query(
                    "<iq type='get' id='\(id)' to='\(to)'><query xmlns='jabber:iq:version'/></iq>", id: id)
                #expect(reply.type == "error" && reply.stanzaErrorCondition == .serviceUnavailable)
            }
            try await alice.send("<presence to='nobody@localhost'/>")
            try await alice.expectNothingPending("directed presence to nobody is dropped")
            try await alice.send("<presence to='nobody@localhost' type='subscribe'/>")
            try await alice.expectPush("nobody@localhost", subscription: "none", ask: true)
            for type in ["subscribed", "unsubscribe", "unsubscribed"] {
                try await alice.send("<presence to='nobody@localhost' type='\(type)'/>")
            }
            let seen = try await alice.sync()
            #expect(!seen.contains { $0.name == "presence" }, "nothing from nobody@localhost: \(seen.map { $0.xmlString() })")
            try await alice.expectNothingPending()
        }
    }

    /// §8.5.2.1.3: an iq to an existing account's bare JID is answered by the server on its
    /// behalf; one to a full JID that is not online is service-unavailable.
    @Test func iqsToAnAccountAreAnsweredByTheServer() async throws {
        try await TestServer.with { server in
            let bob = try await server.im("bob")
            let alice = try await server.login("alice", resource: "r")
            let bare = try await alice.query("<iq type='get' id='v1' to='bob@localhost'><query xmlns='jabber:iq:version'/></iq>", id: "v1")
            #expect(bare.type == "error" || bare.type == "result")
            #expect(bare.from == "bob@localhost")
            let missing = try await alice.query("<iq type='get' id='v2' to='bob@localhost/other'><query xmlns='jabber:iq:version'/></iq>", id: "v2")
            #expect(missing.type == "error" && missing.stanzaErrorCondition == .serviceUnavailable)
            try await bob.expectNothingPending("an iq to the bare JID is not passed to a resource")
        }
    }
}
