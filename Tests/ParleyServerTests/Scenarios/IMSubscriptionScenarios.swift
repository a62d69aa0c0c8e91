import ParleyCore
import Testing

/// RFC 6121 §3 and Appendix A on the wire: for each subscription stanza and each starting
/// state that matters, what the sender's and the contact's clients receive. Alice is the
/// user, bob the contact; both fetched their rosters and are available unless said otherwise.
@Suite struct IMSubscriptionScenarios {
    static let alice = "alice@localhost"
    static let bob = "bob@localhost"

    // MARK: subscribe

    /// A.2.1/A.3.1 from None: the user's item gets ask='subscribe'; the contact gets the
    /// request from the user's bare JID with its status, and no roster item yet.
    @Test func subscribeFromNoneAsksAndDeliversTheRequest() async throws {
        try await TestServer.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            try await alice.send("<presence to='bob@localhost/r' type='subscribe' id='s1'><status>it is alice</status></presence>")
            try await alice.expectPush(Self.bob, subscription: "none", ask: true)
            let request = try await bob.expectPresence(from: Self.alice, type: "subscribe")
            #expect(request.to == Self.bob)
            #expect(request.firstChild("status")?.text == "it is alice")
            try await alice.expectNothingPending()
            try await bob.expectNothingPending("no roster push for a pending-in contact")
            #expect(try await bob.rosterItems().isEmpty)
        }
    }

    /// A.2.3/A.3.3 from None+Pending In / None+Pending Out: approval makes the user To and
    /// the contact From, the user gets `subscribed` from the bare JID and then the contact's
    /// current presence (§3.1.5); the contact sees none of the user's presence.
    @Test func approvingARequestPushesBothSidesAndSendsPresence() async throws {
        try await TestServer.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            try await alice.send("<presence to='bob@localhost' type='subscribe'/>")
            try await alice.expectPush(Self.bob, subscription: "none", ask: true)
            try await bob.expectPresence(from: Self.alice, type: "subscribe")
            try await bob.send("<presence to='alice@localhost' type='subscribed'/>")
            try await bob.expectPush(Self.alice, subscription: "from")
            // As Prosody sends them: the approval, then the push it caused.
            try await alice.expectPresence(from: Self.bob, type: "subscribed")
            try await alice.expectPush(Self.bob, subscription: "to")
            try await alice.expectPresence(from: "bob@localhost/r")
            try await alice.expectNothingPending()
            try await bob.expectNothingPending("alice's presence must not reach bob: he is only From")
            // From now on bob's updates reach alice, alice's do not reach bob.
            try await bob.send("<presence><show>away</show></presence>")
            _ = try await bob.expectPresence(from: "bob@localhost/r")
            try await bob.sync()
            #expect(try await alice.expectPresence(from: "bob@localhost/r").firstChild("show")?.text == "away")
            try await alice.send("<presence><show>dnd</show></presence>")
            _ = try await alice.expectPresence(from: "alice@localhost/r")
            try await alice.sync()
            try await bob.expectNothingPending()
        }
    }

    /// From To (the user subscribed to the contact), the contact's own request and its
    /// approval make both sides Both, with the user's presence going to the contact.
    @Test func aMutualSubscriptionEndsInBoth() async throws {
        try await TestServer.with { server in
            try await Subscribe.establish(server, "alice", to: "bob")
            let alice = try await server.im("alice")
            try await alice.expectNothingPending()
            let bob = try await server.im("bob")
            try await bob.send("<presence to='alice@localhost' type='subscribe'/>")
            try await bob.expectPush(Self.alice, subscription: "from", ask: true)
            // Alice gets bob's initial presence (she is To) and then his request.
            try await alice.expectPresence(from: "bob@localhost/r")
            try await alice.expectPresence(from: Self.bob, type: "subscribe")
            try await alice.send("<presence to='bob@localhost' type='subscribed'/>")
            try await alice.expectPush(Self.bob, subscription: "both")
            try await bob.expectPresence(from: Self.alice, type: "subscribed")
            try await bob.expectPush(Self.alice, subscription: "both")
            try await bob.expectPresence(from: "alice@localhost/r")
            try await alice.expectNothingPending()
            try await bob.expectNothingPending()
        }
    }

    /// A second request while one is pending (A.3.1 None+Pending In) is not delivered again,
    /// but its new status replaces the stored one, which the next login gets (once).
    @Test func aRepeatedRequestIsNotDeliveredTwiceButItsStatusIsKept() async throws {
        try await TestServer.with { server in
            let alice = try await server.im("alice")
            var bob = try await server.im("bob")
            try await alice.send("<presence to='bob@localhost' type='subscribe'><status>first</status></presence>")
            try await alice.expectPush(Self.bob, subscription: "none", ask: true)
            #expect(try await bob.expectPresence(from: Self.alice, type: "subscribe").firstChild("status")?.text == "first")
            try await alice.send("<presence to='bob@localhost' type='subscribe'><status>second</status></presence>")
            try await alice.expectNothingPending("ask is unchanged: no push")
            try await bob.expectNothingPending("the request is pending already")
            try await server.disconnect("bob", bob)
            bob = try await server.im("bob", "again")
            #expect(try await bob.expectPresence(from: Self.alice, type: "subscribe").firstChild("status")?.text == "second")
            try await bob.expectNothingPending()
        }
    }

    /// §3.1.3: a request for an offline contact is delivered, status included, at every
    /// login (each initial presence) until it is answered.
    @Test func aPendingRequestIsRedeliveredAtEachLoginUntilAnswered() async throws {
        try await TestServer.with { server in
            let alice = try await server.im("alice", available: false)
            try await alice.send("<presence to='bob@localhost' type='subscribe'><status>remember me</status></presence>")
            try await alice.expectPush(Self.bob, subscription: "none", ask: true)
            for resource in ["one", "two"] {
                let bob = try await server.im("bob", resource)
                let request = try await bob.expectPresence(from: Self.alice, type: "subscribe")
                #expect(request.firstChild("status")?.text == "remember me")
                try await bob.expectNothingPending()
                if resource == "two" {
                    try await bob.send("<presence to='alice@localhost' type='subscribed'/>")
                    try await bob.expectPush(Self.alice, subscription: "from")
                }
                try await server.disconnect("bob", bob)
            }
            try await alice.expectPush(Self.bob, subscription: "to")
            let bob = try await server.im("bob", "three")
            try await bob.expectNothingPending("an answered request is not delivered again")
        }
    }

    /// A.3.1 From/Both: a request for a subscription that exists is answered by the server
    /// on the contact's behalf (§3.1.3); the contact is not asked and nothing changes.
    @Test func aRequestForAnExistingSubscriptionIsAnsweredWithoutTheContact() async throws {
        try await TestServer.with { server in
            try await Subscribe.establish(server, "alice", to: "bob")
            let alice = try await server.im("alice", available: false)
            let bob = try await server.im("bob", available: false)
            try await alice.send("<presence to='bob@localhost' type='subscribe'/>")
            try await alice.expectNothingPending("already To: no roster change, the auto-reply is not delivered (A.3.3)")
            try await bob.expectNothingPending("bob is not asked again")
            #expect(try await alice.rosterItems()[Self.bob]?[attribute: "subscription"] == "to")
            #expect(try await bob.rosterItems()[Self.alice]?[attribute: "subscription"] == "from")
        }
    }

    // MARK: pre-approval (§3.4)

    @Test func subscribedWithoutARequestPreApprovesAndTheRequestIsApprovedAtOnce() async throws {
        try await TestServer.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            try await bob.send("<presence to='alice@localhost' type='subscribed'/>")
            let preApproved = try await bob.expectPush(Self.alice, subscription: "none")
            #expect(preApproved[attribute: "approved"] == "true")
            try await alice.expectNothingPending("a pre-approval is not sent (A.2.3)")
            try await alice.send("<presence to='bob@localhost' type='subscribe'/>")
            try await alice.expectPush(Self.bob, subscription: "none", ask: true)
            // As Prosody sends them: the approval, then the push it caused.
            try await alice.expectPresence(from: Self.bob, type: "subscribed")
            try await alice.expectPush(Self.bob, subscription: "to")
            try await alice.expectPresence(from: "bob@localhost/r")
            let approved = try await bob.expectPush(Self.alice, subscription: "from")
            #expect(approved[attribute: "approved"] == nil)
            try await bob.expectNothingPending("the request was approved without asking bob")
            try await alice.expectNothingPending()
        }
    }

    @Test func unsubscribedWithdrawsAPreApproval() async throws {
        try await TestServer.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            try await bob.send("<presence to='alice@localhost' type='subscribed'/>")
            #expect(try await bob.expectPush(Self.alice, subscription: "none")[attribute: "approved"] == "true")
            try await bob.send("<presence to='alice@localhost' type='unsubscribed'/>")
            #expect(try await bob.expectPush(Self.alice, subscription: "none")[attribute: "approved"] == nil)
            try await alice.expectNothingPending()
            try await alice.send("<presence to='bob@localhost' type='subscribe'/>")
            try await alice.expectPush(Self.bob, subscription: "none", ask: true)
            try await bob.expectPresence(from: Self.alice, type: "subscribe")
            try await alice.expectNothingPending("not approved any more")
        }
    }

    @Test func thePreApprovalStreamFeatureIsAdvertised() async throws {
        try await TestServer.with { server in
            let client = try await server.connect()
            try await client.secureStream()
            #expect(try await client.authenticateSCRAM(username: "alice", password: "alice-password") == .success)
            let features = try await client.openStream()
            #expect(features.firstChild("sub", namespace: "urn:xmpp:features:pre-approval") != nil, "\(features.xmlString())")
        }
    }

    // MARK: subscribed, unsubscribe, unsubscribed

    /// A.2.4/A.3.4 from None+Pending In: refusing a request clears the user's ask and
    /// tells them; the refused request is not delivered again.
    @Test func refusingARequestClearsTheAskAndForgetsTheRequest() async throws {
        try await TestServer.with { server in
            let alice = try await server.im("alice")
            var bob = try await server.im("bob")
            try await alice.send("<presence to='bob@localhost' type='subscribe'/>")
            try await alice.expectPush(Self.bob, subscription: "none", ask: true)
            try await bob.expectPresence(from: Self.alice, type: "subscribe")
            try await bob.send("<presence to='alice@localhost' type='unsubscribed'/>")
            try await alice.expectPresence(from: Self.bob, type: "unsubscribed")
            try await alice.expectPush(Self.bob, subscription: "none")
            try await bob.expectNothingPending("no item to push on bob's side")
            try await server.disconnect("bob", bob)
            bob = try await server.im("bob", "later")
            try await bob.expectNothingPending("a refused request is gone")
        }
    }

    /// A.2.2 from None+Pending Out: withdrawing one's own request; the contact's pending
    /// request disappears, and a later `subscribed` from the contact is only a pre-approval.
    @Test func unsubscribeWithdrawsAPendingRequest() async throws {
        try await TestServer.with { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            try await alice.send("<presence to='bob@localhost' type='subscribe'/>")
            try await alice.expectPush(Self.bob, subscription: "none", ask: true)
            try await bob.expectPresence(from: Self.alice, type: "subscribe")
            try await alice.send("<presence to='bob@localhost' type='unsubscribe'/>")
            try await alice.expectPush(Self.bob, subscription: "none")
            try await bob.expectPresence(from: Self.alice, type: "unsubscribe")
            try await bob.send("<presence to='alice@localhost' type='subscribed'/>")
            #expect(try await bob.expectPush(Self.alice, subscription: "none")[attribute: "approved"] == "true")
            try await alice.expectNothingPending("a subscribed without a request is not delivered (A.3.3 None)")
        }
    }

    /// A.2.2/A.3.2 from To: the user ends their subscription; both items drop it, the
    /// contact is told, and the user gets the contact's unavailable presence (§3.3.3).
    @Test func unsubscribeFromToEndsTheSubscriptionAndWithdrawsPresence() async throws {
        try await TestServer.with { server in
            try await Subscribe.establish(server, "alice", to: "bob")
            let bob = try await server.im("bob")
            let alice = try await server.im("alice")
            try await alice.expectPresence(from: "bob@localhost/r")
            try await alice.send("<presence to='bob@localhost' type='unsubscribe'/>")
            try await alice.expectPush(Self.bob, subscription: "none")
            try await alice.expectPresence(from: "bob@localhost/r", type: "unavailable")
            try await bob.expectPresence(from: Self.alice, type: "unsubscribe")
            try await bob.expectPush(Self.alice, subscription: "none")
            try await alice.expectNothingPending()
            try await bob.expectNothingPending()
            // Bob's presence no longer reaches alice.
            try await bob.send("<presence><status>gone?</status></presence>")
            _ = try await bob.expectPresence(from: "bob@localhost/r")
            try await bob.sync()
            try await alice.expectNothingPending()
        }
    }

    /// A.2.4/A.3.4 from From: the user cancels the contact's subscription; the contact gets
    /// the user's unavailable presence, a push and the `unsubscribed`.
    @Test func unsubscribedFromFromCancelsAndSendsUnavailable() async throws {
        try await TestServer.with { server in
            try await Subscribe.establish(server, "bob", to: "alice")
            let bob = try await server.im("bob")
            let alice = try await server.im("alice")
            try await bob.expectPresence(from: "alice@localhost/r")
            try await alice.send("<presence to='bob@localhost' type='unsubscribed'/>")
            try await alice.expectPush(Self.bob, subscription: "none")
            let received = try await bob.nextElements(3)
            _ = try received.one("unavailable from alice/r") { $0.isPresence(from: "alice@localhost/r", type: "unavailable") }
            _ = try received.one("push of none") { $0.isPush(Self.alice, subscription: "none") }
            _ = try received.one("unsubscribed") { $0.isPresence(from: Self.alice, type: "unsubscribed") }
            try await alice.expectNothingPending()
            try await bob.expectNothingPending()
            // Alice's presence no longer reaches bob.
            try await alice.send("<presence><status>still here</status></presence>")
            _ = try await alice.expectPresence(from: "alice@localhost/r")
            try await alice.sync()
            try await bob.expectNothingPending()
        }
    }

    /// From Both, unsubscribe leaves the user From and the contact To.
    @Test func unsubscribeFromBothLeavesFrom() async throws {
        try await TestServer.with { server in
            let (alice, bob) = try await Subscribe.mutualOnline(server)
            try await alice.send("<presence to='bob@localhost' type='unsubscribe'/>")
            try await alice.expectPush(Self.bob, subscription: "from")
            try await alice.expectPresence(from: "bob@localhost/r", type: "unavailable")
            try await bob.expectPresence(from: Self.alice, type: "unsubscribe")
            try await bob.expectPush(Self.alice, subscription: "to")
            try await alice.expectNothingPending()
            try await bob.expectNothingPending()
            // Alice's presence still reaches bob; bob's no longer reaches alice.
            try await alice.send("<presence><status>a</status></presence>")
            _ = try await alice.expectPresence(from: "alice@localhost/r")
            try await alice.sync()
            #expect(try await bob.expectPresence(from: "alice@localhost/r").firstChild("status")?.text == "a")
            try await bob.send("<presence><status>b</status></presence>")
            _ = try await bob.expectPresence(from: "bob@localhost/r")
            try await bob.sync()
            try await alice.expectNothingPending()
        }
    }

    /// From Both, unsubscribed leaves the user To and the contact From.
    @Test func unsubscribedFromBothLeavesTo() async throws {
        try await TestServer.with { server in
            let (alice, bob) = try await Subscribe.mutualOnline(server)
            try await alice.send("<presence to='bob@localhost' type='unsubscribed'/>")
            try await alice.expectPush(Self.bob, subscription: "to")
            let received = try await bob.nextElements(3)
            _ = try received.one("unavailable from alice/r") { $0.isPresence(from: "alice@localhost/r", type: "unavailable") }
            _ = try received.one("push of from") { $0.isPush(Self.alice, subscription: "from") }
            _ = try received.one("unsubscribed") { $0.isPresence(from: Self.alice, type: "unsubscribed") }
            try await alice.expectNothingPending()
            try await bob.expectNothingPending()
        }
    }

    /// Stanzas that change nothing are not delivered: unsubscribe and unsubscribed from None
    /// (A.3.2, A.2.4), and subscribed when the contact is subscribed already (A.2.3 From).
    @Test func stanzasThatChangeNothingAreNotDelivered() async throws {
        try await TestServer.with { server in
            try await Subscribe.establish(server, "bob", to: "alice")
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            try await bob.expectPresence(from: "alice@localhost/r")
            try await server.createAccount("carol", password: "carol-password")
            let carol = try await server.im("carol")
            try await alice.send("<presence to='carol@localhost' type='unsubscribe'/>")
            try await alice.send("<presence to='carol@localhost' type='unsubscribed'/>")
            try await alice.send("<presence to='bob@localhost' type='subscribed'/>")
            try await alice.expectNothingPending("no roster change")
            try await carol.expectNothingPending("None: nothing to cancel")
            try await bob.expectNothingPending("already From: subscribed again is not routed")
            #expect(try await carol.rosterItems().isEmpty)
            #expect(try await alice.rosterItems()[Self.bob]?[attribute: "subscription"] == "from")
        }
    }
}
