import Foundation
import ParleyCore
import Testing

/// XEP-0313 on the room JID: a room's archive, paged, filtered, read by whoever may enter,
/// real JIDs only for those who may see them; gone with the room; the source of the join
/// history after a restart; announced with status 170/171 and in disco#info.
@Suite struct MUCArchiveScenarios {
    static let room = "team@conference.localhost"

    @Test func aStrangerPagesThroughAHundredAndTwentyMessagesForwardsAndBackwards() async throws {
        try await MUC.archiving { server in
            let alice = try await server.im("alice")
            let created = try await alice.enter("team", nick: "Alice")
            #expect(created.own.statusCodes == [110, 170, 201], "\(created.own.xmlString())")
            try await MUC.configure(alice, "team", "")
            let bodies = (1...120).map { "m\($0)" }
            try await alice.say(bodies, in: "team")

            // Bob is not in the room: an open room's archive is his to read.
            let bob = try await server.im("bob")
            var collected: [String] = []
            var ids: [String] = []
            var after: String? = nil
            var pages: [ArchiveAnswer] = []
            repeat {
                let page = try await bob.queryRoomArchive(
                    "team", set: "<max>50</max>" + (after.map { "<after>\($0)</after>" } ?? ""), queryID: "p\(pages.count)")
                pages.append(page)
                collected += page.bodies
                ids += page.ids
                after = page.last
                #expect(page.count == 120 && page.first == page.ids.first && page.last == page.ids.last, "\(page.iq.xmlString())")
            } while pages.last?.complete == false && pages.count < 5
            #expect(pages.map(\.results.count) == [50, 50, 20] && pages.map(\.complete) == [false, false, true])
            #expect(collected == bodies, "every message once, in order")

            let result = try #require(pages.first?.results.first)
            #expect(result.from == Self.room && result.to == "bob@localhost/r", "\(result.xmlString())")
            let forwarded = try #require(result.firstChild("result", namespace: MUC.mam)?.firstChild("forwarded", namespace: XMLNamespace.forward))
            #expect(forwarded.firstChild("delay", namespace: XMLNamespace.delay)?[attribute: "stamp"] != nil)
            let message = try #require(forwarded.firstChild("message"))
            #expect(message.from == "\(Self.room)/Alice" && message.type == "groupchat" && message.to == nil, "\(message.xmlString())")
            #expect(message.firstChild("x", namespace: MUC.user) == nil, "a semi-anonymous room hides the sender from Bob")

            // The room's stanza-id, as occupants got it, is the archive id.
            try await alice.send("<message to='\(Self.room)' type='groupchat' id='live'><body>live</body></message>")
            let live = try await alice.expectMessage(id: "live")
            let stanzaID = live.firstChild("stanza-id", namespace: XMLNamespace.stanzaID)
            #expect(stanzaID?[attribute: "by"] == Self.room)

            // Backwards from the end: the last page first, oldest first within it.
            let lastPage = try await bob.queryRoomArchive("team", set: "<max>10</max><before/>", queryID: "back")
            #expect(lastPage.bodies == (112...120).map { "m\($0)" } + ["live"] && !lastPage.complete, "\(lastPage.bodies)")
            #expect(lastPage.ids.last == stanzaID?[attribute: "id"])
            let before = try await bob.queryRoomArchive(
                "team", set: "<max>10</max><before>\(lastPage.first ?? "")</before>", queryID: "back2")
            #expect(before.bodies == (102...111).map { "m\($0)" }, "\(before.bodies)")
            // flip-page: the same page newest first; first and last still name its oldest and newest.
            let flipped = try await bob.queryRoomArchive("team", set: "<max>10</max><before/>", flip: true, queryID: "flip")
            #expect(flipped.bodies == lastPage.bodies.reversed() && flipped.first == lastPage.first, "\(flipped.bodies)")
            let oldest = try await bob.queryRoomArchive("team", set: "<max>5</max><before>\(ids[3])</before>", queryID: "back3")
            #expect(oldest.bodies == ["m1", "m2", "m3"] && oldest.complete)

            let unknown = try await bob.queryRoomArchive("team", set: "<after>no-such-id</after>", queryID: "bad")
            #expect(unknown.iq.stanzaErrorCondition == .itemNotFound, "\(unknown.iq.xmlString())")
            let nowhere = try await bob.query(
                "<iq type='set' id='nr' to='nowhere@\(MUC.service)'><query xmlns='\(MUC.mam)'/></iq>", id: "nr")
            #expect(nowhere.stanzaErrorCondition == .itemNotFound)
        }
    }

    @Test func aRoomsArchiveKeepsItsNewestMessagesUpToTheLimit() async throws {
        try await MUC.archiving({ $0.archiveMaxMessagesPerRoom = 5 }) { server in
            let alice = try await server.im("alice")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice", codes: [110, 170, 201])
            try await alice.say((1...8).map { "m\($0)" }, in: "team")
            let kept = try await alice.queryRoomArchive("team")
            #expect(kept.bodies == (4...8).map { "m\($0)" } && kept.count == 5, "\(kept.bodies)")
        }
    }

    @Test func queriesFilterByTimeAndByOccupant() async throws {
        try await MUC.archiving { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            for (client, body) in [(alice, "a1"), (bob, "b1"), (alice, "a2")] {
                try await client.send("<message to='\(Self.room)' type='groupchat' id='\(body)'><body>\(body)</body></message>")
                for reader in [alice, bob, carol] { try await reader.expectMessage(id: body) }
            }
            try await Task.sleep(for: .milliseconds(20))
            let cut = Date()
            try await Task.sleep(for: .milliseconds(20))
            try await bob.send("<message to='\(Self.room)' type='groupchat' id='b2'><body>b2</body></message>")
            for reader in [alice, bob, carol] { try await reader.expectMessage(id: "b2") }
            let stamp = Self.stamp(cut)

            let bobs = try await carol.queryRoomArchive("team", fields: "<field var='with'><value>\(Self.room)/Bob</value></field>")
            #expect(bobs.bodies == ["b1", "b2"] && bobs.count == 2, "\(bobs.bodies)")
            let everyone = try await carol.queryRoomArchive("team", fields: "<field var='with'><value>\(Self.room)</value></field>", queryID: "all")
            #expect(everyone.bodies == ["a1", "b1", "a2", "b2"])
            let later = try await carol.queryRoomArchive("team", fields: "<field var='start'><value>\(stamp)</value></field>", queryID: "s")
            #expect(later.bodies == ["b2"], "\(later.bodies)")
            let earlier = try await carol.queryRoomArchive("team", fields: "<field var='end'><value>\(stamp)</value></field>", queryID: "e")
            #expect(earlier.bodies == ["a1", "b1", "a2"], "\(earlier.bodies)")

            // A real JID tells who is behind a nickname: only those who may see real JIDs
            // filter by one (the owner here, not Carol).
            let byAccount = "<field var='with'><value>bob@localhost</value></field>"
            let refused = try await carol.queryRoomArchive("team", fields: byAccount, queryID: "r")
            #expect(refused.iq.stanzaErrorCondition == .forbidden, "\(refused.iq.xmlString())")
            let owners = try await alice.queryRoomArchive("team", fields: byAccount, queryID: "o")
            #expect(owners.bodies == ["b1", "b2"], "\(owners.bodies)")

            let badDate = try await carol.queryRoomArchive("team", fields: "<field var='start'><value>yesterday</value></field>", queryID: "d")
            #expect(badDate.iq.stanzaErrorCondition == .badRequest)
            let badField = try await carol.queryRoomArchive("team", fields: "<field var='color'><value>x</value></field>", queryID: "f")
            #expect(badField.iq.stanzaErrorCondition == .badRequest)
            let fields = try await carol.query("<iq type='get' id='qf' to='\(Self.room)'><query xmlns='\(MUC.mam)'/></iq>", id: "qf")
            let names = fields.firstChild("query", namespace: MUC.mam)?.firstChild("x", namespace: XMLNamespace.dataForms)?
                .children("field", namespace: XMLNamespace.dataForms).compactMap { $0[attribute: "var"] }
            #expect(names == ["FORM_TYPE", "with", "start", "end", "before-id", "after-id", "ids"], "\(fields.xmlString())")
        }
    }

    @Test func realJIDsAppearOnlyForThoseAllowedToSeeThem() async throws {
        try await MUC.archiving { server in
            let (alice, bob, carol) = try await MUCScenarios.threeInTheRoom(server)
            try await bob.send("<message to='\(Self.room)' type='groupchat' id='hi'><body>hi</body></message>")
            for reader in [alice, bob, carol] { try await reader.expectMessage(id: "hi") }
            func senderJID(_ answer: ArchiveAnswer) -> String? {
                answer.messages.first?.firstChild("x", namespace: MUC.user)?.firstChild("item", namespace: MUC.user)?[attribute: "jid"]
            }
            let moderator = try await alice.queryRoomArchive("team")
            #expect(senderJID(moderator) == "bob@localhost", "\(moderator.results.map { $0.xmlString() })")
            let participant = try await carol.queryRoomArchive("team")
            #expect(participant.bodies == ["hi"] && senderJID(participant) == nil, "semi-anonymous: Carol sees no real JID")

            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_whois'><value>anyone</value></field>")
            let open = try await carol.queryRoomArchive("team", queryID: "open")
            #expect(senderJID(open) == "bob@localhost", "non-anonymous: everyone sees it")
        }
    }

    @Test func membersOnlyAndBannedAccountsMayNotReadTheArchive() async throws {
        try await MUC.archiving { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            let carol = try await server.im("carol")
            _ = try await alice.enter("team", nick: "Alice")
            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_membersonly'><value>1</value></field>")
            try await alice.say(["secret"], in: "team")

            // A room still locked (being created) is not there for others.
            try await carol.send("<presence to='\(Self.room.replacingOccurrences(of: "team@", with: "new@"))/Carol'><x xmlns='\(MUC.muc)'/></presence>")
            _ = try await carol.enterReplies()
            let locked = try await bob.queryRoomArchive("new", queryID: "locked")
            #expect(locked.iq.stanzaErrorCondition == .itemNotFound, "\(locked.iq.xmlString())")

            let refused = try await carol.queryRoomArchive("team")
            #expect(refused.iq.stanzaErrorCondition == .forbidden && refused.results.isEmpty, "\(refused.iq.xmlString())")
            try await alice.sendAdmin("<item jid='carol@localhost' affiliation='member'/>", id: "m")
            // Alice, an owner, is told of the change to someone not in the room, then answered.
            #expect(try await alice.expect("message").mucItem?[attribute: "affiliation"] == "member")
            try await alice.expectResult("m")
            #expect(try await carol.expect("message").statusCodes == [101])
            #expect(try await carol.queryRoomArchive("team", queryID: "member").bodies == ["secret"])

            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_membersonly'><value>0</value></field>")
            #expect(try await alice.expect("message").statusCodes == [104])
            try await alice.sendAdmin("<item jid='bob@localhost' affiliation='outcast'/>", id: "b")
            #expect(try await alice.expect("message").mucItem?[attribute: "affiliation"] == "outcast")
            try await alice.expectResult("b")
            #expect(try await bob.expect("message").statusCodes == [101])
            let banned = try await bob.queryRoomArchive("team", queryID: "banned")
            #expect(banned.iq.stanzaErrorCondition == .forbidden && banned.results.isEmpty)
        }
    }

    @Test func aDestroyedRoomTakesItsArchiveAndATemporaryRoomItsOwn() async throws {
        try await MUC.archiving { server in
            let alice = try await server.im("alice")
            _ = try await alice.enter("team", nick: "Alice")
            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_persistentroom'><value>1</value></field>")
            try await alice.say(["before"], in: "team")
            try await alice.send("<iq type='set' id='d' to='\(Self.room)'><query xmlns='\(MUC.owner)'><destroy/></query></iq>")
            try await alice.expectRoomPresence("team", "Alice", type: "unavailable", codes: [110])
            #expect(try await alice.expect("iq").type == "result")

            // A new room of the same name starts with an empty archive, now and after a restart.
            try await MUC.createInstantRoom(alice, "team", nick: "Alice", codes: [110, 170, 201])
            let fresh = try await alice.queryRoomArchive("team")
            #expect(fresh.results.isEmpty && fresh.count == 0 && fresh.complete, "\(fresh.bodies)")
            try await alice.say(["temporary"], in: "team")
            try await alice.send("<presence to='\(Self.room)/Alice' type='unavailable'/>")
            try await alice.expectRoomPresence("team", "Alice", type: "unavailable", codes: [110])
            try await MUC.createInstantRoom(alice, "team", nick: "Alice", codes: [110, 170, 201])
            #expect(try await alice.queryRoomArchive("team", queryID: "again").results.isEmpty, "the temporary room's archive went with it")
        }
    }

    @Test func aPersistentRoomKeepsItsHistoryAndArchiveAcrossARestart() async throws {
        try await MUC.archiving { server in
            let alice = try await server.im("alice")
            _ = try await alice.enter("keep", nick: "Alice")
            try await MUC.configure(alice, "keep", "<field var='muc#roomconfig_persistentroom'><value>1</value></field>")
            let bodies = (1...25).map { "k\($0)" }
            try await alice.say(bodies, in: "keep")
            try await alice.send("<message to='keep@\(MUC.service)' type='groupchat' id='quiet'><body>q</body><no-store xmlns='urn:xmpp:hints'/></message>")
            try await alice.expectMessage(id: "quiet")
            await alice.close()

            try await server.restart()
            let bob = try await server.im("bob")
            let entry = try await bob.enter("keep", nick: "Bob")
            #expect(entry.own.statusCodes == [110, 170], "\(entry.own.xmlString())")
            // The last 20 (the room's history size), not the one marked no-store.
            #expect(entry.history.map(\.id) == Array(bodies.suffix(20)), "\(entry.history.map { $0.id ?? "" })")
            for message in entry.history {
                #expect(message.from == "keep@\(MUC.service)/Alice" && message.to == "bob@localhost/r")
                #expect(message.firstChild("delay", namespace: XMLNamespace.delay)?[attribute: "from"] == "keep@\(MUC.service)")
                #expect(message.firstChild("stanza-id", namespace: XMLNamespace.stanzaID)?[attribute: "by"] == "keep@\(MUC.service)")
            }
            let carol = try await server.im("carol")
            try await carol.send("<presence to='keep@\(MUC.service)/Carol'><x xmlns='\(MUC.muc)'><history maxstanzas='2'/></x></presence>")
            #expect(try await carol.enterReplies().history.map(\.id) == ["k24", "k25"])
            try await bob.expectRoomPresence("keep", "Carol")
            let archive = try await bob.queryRoomArchive("keep", set: "<max>100</max>")
            #expect(archive.bodies == bodies && archive.complete)
        }
    }

    @Test func loggingIsAnnouncedWith170And171AndInDiscoInfo() async throws {
        try await MUC.archiving { server in
            let alice = try await server.im("alice")
            let bob = try await server.im("bob")
            try await MUC.createInstantRoom(alice, "team", nick: "Alice", codes: [110, 170, 201])
            #expect(try await bob.enter("team", nick: "Bob").own.statusCodes == [110, 170])
            try await alice.expectRoomPresence("team", "Bob")
            #expect(try await Self.features(bob).contains(MUC.mam))
            let form = try await alice.query("<iq type='get' id='f' to='\(Self.room)'><query xmlns='\(MUC.owner)'/></iq>", id: "f")
            let field = form.firstChild("query", namespace: MUC.owner)?.firstChild("x", namespace: XMLNamespace.dataForms)?
                .children("field", namespace: XMLNamespace.dataForms).first { $0[attribute: "var"] == "muc#roomconfig_enablearchiving" }
            #expect(field?[attribute: "type"] == "boolean" && field?.firstChild("value", namespace: XMLNamespace.dataForms)?.text == "1")

            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_enablearchiving'><value>0</value></field>")
            for client in [alice, bob] {
                let notice = try await client.expect("message")
                #expect(notice.from == Self.room && notice.type == "groupchat" && notice.statusCodes == [171], "\(notice.xmlString())")
            }
            #expect(try await Self.features(bob).contains(MUC.mam) == false)
            try await alice.say(["unlogged"], in: "team")
            _ = try await bob.expectMessage(id: "unlogged")
            #expect(try await bob.queryRoomArchive("team").results.isEmpty, "nothing archived while logging is off")
            #expect(try await server.im("carol").enter("team", nick: "Carol").own.statusCodes == [110])
            try await alice.expectRoomPresence("team", "Carol")
            try await bob.expectRoomPresence("team", "Carol")

            // Submitting the same value again changes nothing and announces nothing.
            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_enablearchiving'><value>0</value></field>")
            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_enablearchiving'><value>1</value></field>")
            for client in [alice, bob] { #expect(try await client.expect("message").statusCodes == [170]) }
            try await bob.expectNothingPending()
            // XEP-0045's name for the same setting; a client that returns the whole form sends
            // both, and the one that differs from the current value is the change.
            let both = try await alice.query("<iq type='get' id='f2' to='\(Self.room)'><query xmlns='\(MUC.owner)'/></iq>", id: "f2")
            #expect(both.firstChild("query", namespace: MUC.owner)?.firstChild("x", namespace: XMLNamespace.dataForms)?.formValues["muc#roomconfig_enablelogging"] == "1")
            try await MUC.configure(alice, "team", "<field var='muc#roomconfig_enablelogging'><value>0</value></field>")
            for client in [alice, bob] { #expect(try await client.expect("message").statusCodes == [171]) }
            try await MUC.configure(
                alice, "team",
                "<field var='muc#roomconfig_enablearchiving'><value>0</value></field><field var='muc#roomconfig_enablelogging'><value>1</value></field>")
            for client in [alice, bob] { #expect(try await client.expect("message").statusCodes == [170]) }
            #expect(try await Self.features(bob).contains(MUC.mam))
            let bad = try await alice.query(
                "<iq type='set' id='b' to='\(Self.room)'><query xmlns='\(MUC.owner)'><x xmlns='jabber:x:data' type='submit'><field var='muc#roomconfig_enablearchiving'><value>maybe</value></field></x></query></iq>",
                id: "b")
            #expect(bad.stanzaErrorCondition == .badRequest)
        }
    }

    static func features(_ client: TestClient) async throws -> [String] {
        let info = try await client.query(
            "<iq type='get' id='di' to='\(room)'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>", id: "di")
        return info.firstChild("query", namespace: XMLNamespace.discoInfo)?.children("feature").compactMap { $0[attribute: "var"] } ?? []
    }

    static func stamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
