import ParleyCore
import Testing

/// XEP-0045 §7.13 and §8.6: in a moderated room newcomers are visitors; one asks for voice,
/// the moderator gets the approval form and grants it, and everyone sees the new role.
@Suite struct MUCVoiceScenarios {
    static let room = MUCScenarios.room

    static func request(id: String) -> String {
        """
        <message to='\(room)' id='\(id)'><x xmlns='jabber:x:data' type='submit'>\
        <field var='FORM_TYPE'><value>\(MUCRoles.requestForm)</value></field>\
        <field var='muc#role' type='list-single'><value>participant</value></field></x></message>
        """
    }

    static func answer(_ nick: String, allow: Bool, id: String) -> String {
        """
        <message to='\(room)' id='\(id)'><x xmlns='jabber:x:data' type='submit'>\
        <field var='FORM_TYPE'><value>\(MUCRoles.requestForm)</value></field>\
        <field var='muc#role'><value>participant</value></field>\
        <field var='muc#roomnick'><value>\(nick)</value></field>\
        <field var='muc#request_allow'><value>\(allow ? "true" : "false")</value></field></x></message>
        """
    }

    /// Alice owns a moderated room; Bob and Carol enter it as visitors.
    static func moderatedRoom(_ server: TestServer) async throws -> (TestClient, TestClient, TestClient) {
        let alice = try await server.im("alice")
        let bob = try await server.im("bob")
        let carol = try await server.im("carol")
        try await MUCRoles.createRoom(alice, nick: "Alice", fields: "<field var='muc#roomconfig_moderatedroom'><value>1</value></field>")
        let bobIn = try await bob.enter("team", nick: "Bob")
        #expect(bobIn.own.mucItem?[attribute: "role"] == "visitor", "\(bobIn.own.xmlString())")
        try await alice.expectRoomPresence("team", "Bob")
        _ = try await carol.enter("team", nick: "Carol")
        try await alice.expectRoomPresence("team", "Carol")
        try await bob.expectRoomPresence("team", "Carol")
        return (alice, bob, carol)
    }

    @Test func aVisitorAsksForVoiceAndTheModeratorGrantsIt() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await Self.moderatedRoom(server)
            let info = try await carol.query("<iq type='get' id='i' to='\(Self.room)'><query xmlns='\(XMLNamespace.discoInfo)'/></iq>", id: "i")
            let features = info.firstChild("query", namespace: XMLNamespace.discoInfo)?.children("feature").compactMap { $0[attribute: "var"] } ?? []
            #expect(features.contains("muc_moderated") && features.contains(MUCRoles.requestForm), "\(features)")
            try await bob.send("<message to='\(Self.room)' type='groupchat' id='g0'><body>may I?</body></message>")
            #expect(try await bob.expect("message").stanzaErrorCondition == .forbidden, "visitors do not speak")

            try await bob.send(Self.request(id: "v1"))
            let approval = try await alice.expect("message")
            #expect(approval.from == Self.room, "\(approval.xmlString())")
            let form = try #require(approval.firstChild("x", namespace: "jabber:x:data"), "\(approval.xmlString())")
            #expect(form[attribute: "type"] == "form")
            let values = form.formValues
            #expect(values["FORM_TYPE"] == MUCRoles.requestForm && values["muc#roomnick"] == "Bob" && values["muc#jid"] == "bob@localhost/r")
            #expect(values["muc#role"] == "participant" && values["muc#request_allow"] == "false", "\(values)")
            try await carol.expectNothingPending("only moderators get voice requests")
            try await bob.expectNothingPending()

            try await alice.send(Self.answer("Bob", allow: true, id: "a1"))
            let own = try await bob.expectRoomPresence("team", "Bob", codes: [110])
            #expect(own.mucItem?[attribute: "role"] == "participant", "\(own.xmlString())")
            for client in [alice, carol] {
                let seen = try await client.expectRoomPresence("team", "Bob")
                #expect(seen.mucItem?[attribute: "role"] == "participant", "\(seen.xmlString())")
            }
            try await bob.send("<message to='\(Self.room)' type='groupchat' id='g1'><body>thanks</body></message>")
            for client in [alice, bob, carol] { try await client.expectMessage(id: "g1") }

            // Bob has voice now: another request is refused; a stranger's too.
            try await bob.send(Self.request(id: "v2"))
            let again = try await bob.expect("message")
            #expect(again.type == "error" && again.stanzaErrorCondition == .notAcceptable, "\(again.xmlString())")
            let stranger = try await server.im("carol", "other", available: false)
            try await stranger.send(Self.request(id: "v3"))
            #expect(try await stranger.expect("message").stanzaErrorCondition == .notAcceptable)
            try await alice.expectNothingPending()
        }
    }

    @Test func aDeniedRequestChangesNothingAndBadFormsAreRefused() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await Self.moderatedRoom(server)
            try await carol.send(Self.request(id: "v1"))
            let approval = try await alice.expect("message")
            #expect(approval.firstChild("x", namespace: "jabber:x:data")?.formValues["muc#roomnick"] == "Carol")
            try await alice.send(Self.answer("Carol", allow: false, id: "a1"))
            for client in [alice, bob, carol] { try await client.expectNothingPending("a denial changes no one's role") }
            try await alice.send(Self.answer("Nobody", allow: true, id: "a2"))
            #expect(try await alice.expect("message").stanzaErrorCondition == .itemNotFound)
            try await carol.send(
                "<message to='\(Self.room)' id='v2'><x xmlns='jabber:x:data' type='submit'><field var='FORM_TYPE'><value>urn:other</value></field></x></message>")
            #expect(try await carol.expect("message").stanzaErrorCondition == .badRequest)
            try await carol.send(
                """
                <message to='\(Self.room)' id='v3'><x xmlns='jabber:x:data' type='submit'>\
                <field var='FORM_TYPE'><value>\(MUCRoles.requestForm)</value></field><field var='muc#role'><value>moderator</value></field></x></message>
                """)
            #expect(try await carol.expect("message").stanzaErrorCondition == .badRequest)
            for client in [alice, bob] { try await client.expectNothingPending() }
        }
    }

    /// §7.10 for someone in the room: registering makes a visitor a member, and a member
    /// of a moderated room has voice; everyone sees the new affiliation and role.
    @Test func aVisitorWhoRegistersBecomesAMemberWithVoice() async throws {
        try await MUC.with { server in
            let (alice, bob, carol) = try await Self.moderatedRoom(server)
            #expect(try await carol.query(MUCRoles.registration("Carol", id: "r"), id: "r").type == "result")
            let own = try await carol.expectRoomPresence("team", "Carol", codes: [110])
            #expect(own.mucItem?[attribute: "affiliation"] == "member" && own.mucItem?[attribute: "role"] == "participant", "\(own.xmlString())")
            for client in [alice, bob] {
                let seen = try await client.expectRoomPresence("team", "Carol")
                #expect(seen.mucItem?[attribute: "affiliation"] == "member" && seen.mucItem?[attribute: "role"] == "participant")
            }
            try await carol.send("<message to='\(Self.room)' type='groupchat' id='g'><body>hello</body></message>")
            for client in [alice, bob, carol] { try await client.expectMessage(id: "g") }
        }
    }
}
