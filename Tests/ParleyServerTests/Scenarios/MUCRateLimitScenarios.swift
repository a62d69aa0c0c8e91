import ParleyCore
import ParleyMUC
import Testing

/// Each occupant's groupchat rate (a token bucket) and the nickname rules: whoever breaks
/// them gets the error, the room goes on for everyone else.
@Suite struct MUCRateLimitScenarios {
    static let room = MUCScenarios.room

    @Test func anOccupantOverTheRateIsRefusedAndTheOthersGoOn() async throws {
        // A burst of three, then practically nothing: the fourth message is over the limit.
        try await MUC.with({ $0.rateLimit = MUCRateLimit(messagesPerSecond: 0.001, burst: 3) }) { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            for id in ["b1", "b2", "b3"] {
                try await bob.send("<message to='\(Self.room)' type='groupchat' id='\(id)'><body>\(id)</body></message>")
                for client in [alice, bob, carol] { try await client.expectMessage(id: id) }
            }
            try await bob.send("<message to='\(Self.room)' type='groupchat' id='b4'><body>b4</body></message>")
            let refused = try await bob.expect("message")
            #expect(refused.type == "error" && refused.id == "b4" && refused.stanzaErrorCondition == .policyViolation, "\(refused.xmlString())")
            let error = try #require(StanzaError(stanza: refused))
            #expect(error.type == .wait && error.text?.contains("too fast") == true, "\(refused.xmlString())")
            for client in [alice, carol] { try await client.expectNothingPending("the refused message reached no one") }
            // Carol's bucket is her own.
            try await carol.send("<message to='\(Self.room)' type='groupchat' id='c1'><body>c1</body></message>")
            for client in [alice, bob, carol] { try await client.expectMessage(id: "c1") }
        }
    }

    @Test func theBucketRefillsAtTheConfiguredRate() async throws {
        try await MUC.with({ $0.rateLimit = MUCRateLimit(messagesPerSecond: 2, burst: 1) }) { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            try await bob.send("<message to='\(Self.room)' type='groupchat' id='b1'><body>1</body></message>")
            try await bob.send("<message to='\(Self.room)' type='groupchat' id='b2'><body>2</body></message>")
            try await bob.expectMessage(id: "b1")
            #expect(try await bob.expect("message").stanzaErrorCondition == .policyViolation, "the second at once is one too many")
            try await Task.sleep(for: .milliseconds(700))
            try await bob.send("<message to='\(Self.room)' type='groupchat' id='b3'><body>3</body></message>")
            for client in [alice, bob, carol] {
                if client !== bob { try await client.expectMessage(id: "b1") }
                try await client.expectMessage(id: "b3")
            }
        }
    }

    @Test func nicknamesThatAreTooLongOrBlankAreRefused() async throws {
        try await MUC.with({ $0.nicknames.maxBytes = 10 }) { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            let carol = try await server.im("carol")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice")
            try await bob.send("<presence to='\(Self.room)/ElevenBytes'><x xmlns='\(MUC.muc)'/></presence>")
            let long = try await bob.expect("presence")
            #expect(long.type == "error" && long.stanzaErrorCondition == .jidMalformed, "\(long.xmlString())")
            try await bob.send("<presence to='\(Self.room)/ \u{A0} '><x xmlns='\(MUC.muc)'/></presence>")
            let blank = try await bob.expect("presence")
            #expect(blank.type == "error" && blank.stanzaErrorCondition == .notAllowed, "\(blank.xmlString())")
            try await bob.send("<presence to='\(Self.room)/'><x xmlns='\(MUC.muc)'/></presence>")
            let empty = try await bob.expect("presence")
            #expect(empty.type == "error" && empty.stanzaErrorCondition == .jidMalformed, "\(empty.xmlString())")
            // A nickname change is held to the same rules.
            _ = try await carol.enter("team", nick: "Carol")
            try await alice.expectRoomPresence("team", "Carol")
            try await carol.send("<presence to='\(Self.room)/CarolineTheGreat'/>")
            #expect(try await carol.expect("presence").stanzaErrorCondition == .jidMalformed)
            try await alice.expectNothingPending()
            #expect(try await bob.enter("team", nick: "TenBytes!!").own.statusCodes == [110])
        }
    }
}
