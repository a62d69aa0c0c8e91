import Foundation
import ParleyClient
import ParleyCore
import Testing

/// Profiles, bookmarks, last activity and CSI against Prosody 0.12 (mod_pep, mod_vcard_legacy,
/// mod_bookmarks, mod_private, mod_lastactivity, mod_csi_simple): the client must work with a
/// server it did not grow up with.
@Suite(.sharedProsody) struct ProsodyProfileScenarioTests {
    @Test func avatarAndNicknameReachAFriendAndStayCachedAcrossARestart() async throws {
        let prosody = try SharedProsody.prosody
        let (alice, aliceEvents) = try SharedProsody.client("alice")
        let bobCache = prosody.directory + "/clients/bob-restarted.sqlite"
        let (bob, bobEvents) = try SharedProsody.client("bob", cache: bobCache)
        try await alice.connect()
        try await bob.connect()
        // The nickname goes with the friend request too (XEP-0172 §4.2).
        try await alice.setNickname("Alice Liddell")
        try await alice.addContact(jid("bob"))
        try await bobEvents.next("the request") { if case .contactRequest(let from, _) = $0 { from == jid("alice") } else { false } }
        #expect(await bob.friendRequests().map(\.nickname) == ["Alice Liddell"])
        await bob.accept(jid("alice"))
        try await eventually("friends") {
            let one = await alice.contacts().first?.subscription
            let two = await bob.contacts().first?.subscription
            return one == .both && two == .both
        }

        let picture = samplePNG(width: 64, height: 48)
        let id = try await alice.setAvatar(picture)
        #expect(id.count == 40)
        // Bob's caps say +notify: Prosody pushes the metadata, Bob's client fetches the bytes.
        // Prosody also puts the avatar into Alice's vCard (mod_vcard_legacy) and its hash into
        // her presence, so the picture may reach Bob through the vCard first: wait for the
        // PEP path itself.
        try await eventually("Bob has Alice's avatar from PEP") {
            let hash = await bob.profile(of: jid("alice"))?.avatarHash
            let data = await bob.avatar(of: jid("alice"))?.data
            return hash == id && data == picture
        }
        let profile = try #require(await bob.profile(of: jid("alice")))
        #expect(profile.avatarHash == id && profile.nickname == "Alice Liddell")
        #expect(bobEvents.all.contains(.contactProfileChanged(jid("alice"))))
        #expect(await bob.displayName(for: jid("alice")) == "Alice Liddell")
        #expect(await bob.avatar(of: jid("alice"))?.type == "image/png")

        // A nickname change arrives as a notification too.
        try await alice.setNickname("Alice L.")
        try await eventually("the new nickname") { await bob.displayName(for: jid("alice")) == "Alice L." }

        // A data item that does not hash to its id is refused: the old picture stays.
        let forged = samplePNG(width: 1, height: 1)
        let wrongID = String(repeating: "ab", count: 20)
        try await publishRaw(alice, node: "urn:xmpp:avatar:data", id: wrongID, payload: XMLElement("data", namespace: "urn:xmpp:avatar:data", text: Base64.encode(forged)))
        try await publishRaw(alice, node: "urn:xmpp:avatar:metadata", id: wrongID, payload: XMLElement("metadata", namespace: "urn:xmpp:avatar:metadata", [:], [
            XMLElement("info", namespace: "urn:xmpp:avatar:metadata", ["id": wrongID, "bytes": String(forged.count), "type": "image/png"]),
        ]))
        try await bob.settle()
        try await Task.sleep(for: .milliseconds(500))
        #expect(await bob.profile(of: jid("alice"))?.avatarHash == id)
        #expect(await bob.avatar(of: jid("alice"))?.data == picture)
        // Put the real one back for the restart below. Alice's next presence carries its hash
        // (Prosody adds it, XEP-0153): Bob's client fetches her vCard for it, once.
        try await alice.setAvatar(picture)
        await alice.setStatus(.available, text: "new picture")
        try await eventually("Bob has Alice's vCard for the photo hash") { await bob.profile(of: jid("alice"))?.vcardPhotoHash == id }
        try await bob.settle()

        // Bob restarts: the cache has the picture and the names before the server says a word,
        // and the notification Prosody sends at login (same id) fetches nothing.
        await bob.disconnect()
        let logBefore = (try? String(contentsOfFile: prosody.logPath, encoding: .utf8))?.count ?? 0
        let (bobAgain, bobAgainEvents) = try SharedProsody.client("bob", cache: bobCache)
        try await bobAgain.connect()
        #expect(await bobAgain.avatar(of: jid("alice"))?.data == picture)
        #expect(await bobAgain.displayName(for: jid("alice")) == "Alice L.")
        try await bobAgain.settle()
        try await Task.sleep(for: .milliseconds(700))
        try await bobAgain.settle()
        let logAfter = String(((try? String(contentsOfFile: prosody.logPath, encoding: .utf8)) ?? "").dropFirst(logBefore))
        #expect(logAfter.contains("urn:xmpp:avatar:metadata"), "Prosody sent the metadata again at login")
        // (Other tests share the log: only Bob's requests to Alice count.)
        let fetches = logAfter.split(separator: "\n").filter { $0.contains("RECV: <iq") && $0.contains("to='alice@localhost'") }
        #expect(!fetches.contains { $0.contains("urn:xmpp:avatar:data") || $0.contains("vcard-temp") }, "fetched again: \(fetches)")
        #expect(!bobAgainEvents.all.contains(.contactProfileChanged(jid("alice"))))
        _ = aliceEvents
        await alice.disconnect()
        await bobAgain.disconnect()
    }

    /// What another client asks ours: disco#info for the caps node#ver of its presence
    /// (XEP-0115 §6.2), an unknown node, the software version (XEP-0092). And an avatar taken
    /// down (XEP-0084 §4.5) is gone on the other side too.
    @Test func ourClientAnswersCapsDiscoAndVersionAndAvatarRemovalReachesFriends() async throws {
        let (lena, lenaEvents) = try SharedProsody.client("lena")
        let (mike, mikeEvents) = try SharedProsody.client("mike")
        try await lena.connect()
        try await mike.connect()
        try await makeFriends(lena, jid("lena"), lenaEvents, mike, jid("mike"), mikeEvents)
        // Mike's client saw Lena's caps in her presence.
        try await eventually("Lena's presence with caps") { await mike.resources(of: jid("lena")).first?.capsNode == "https://parley.chat/client" }
        let lenaFull = try #require(await lena.xmpp.boundJID)
        func disco(_ node: String?) async throws -> XMLElement {
            var query = XMLElement("query", namespace: XMLNamespace.discoInfo)
            if let node { query.setAttribute("node", node) }
            return try await mike.xmpp.request(XMLElement("iq", namespace: XMLNamespace.client, ["type": "get", "to": lenaFull.description], [query]))
        }
        let ver = EntityCapabilities.ver(identities: [EntityCapabilities.Identity(category: "client", type: "pc", name: "Parley")], features: try await disco(nil)
            .firstChild("query", namespace: XMLNamespace.discoInfo)!.children("feature").compactMap { $0[attribute: "var"] })
        let answer = try await disco("https://parley.chat/client#\(ver)").firstChild("query", namespace: XMLNamespace.discoInfo)
        #expect(answer?[attribute: "node"] == "https://parley.chat/client#\(ver)")
        #expect(answer?.children("feature").contains { $0[attribute: "var"] == "urn:xmpp:avatar:metadata+notify" } == true)
        await #expect(throws: StanzaError(.itemNotFound, text: "No such node.")) { try await disco("https://parley.chat/client#wrong") }
        let version = try await mike.softwareVersion(of: lenaFull)
        #expect(version.name == "Parley" && version.version == "0.1.0" && version.os == nil)

        try await lena.setAvatar(samplePNG(width: 4, height: 4))
        try await eventually("Mike has Lena's avatar") { await mike.avatar(of: jid("lena")) != nil }
        try await lena.removeAvatar()
        try await eventually("Lena's avatar is gone for Mike") { await mike.avatar(of: jid("lena")) == nil }
        #expect(await mike.profile(of: jid("lena"))?.avatarHash == "")
        await lena.disconnect()
        await mike.disconnect()
    }

    @Test func vCardIsWrittenAndReadAndItsPhotoHashInPresenceBringsItToFriends() async throws {
        let (carol, carolEvents) = try SharedProsody.client("carol")
        let (dave, daveEvents) = try SharedProsody.client("dave")
        try await carol.connect()
        try await dave.connect()
        try await makeFriends(carol, jid("carol"), carolEvents, dave, jid("dave"), daveEvents)
        #expect(try await carol.vCard() == VCard())

        let photo = samplePNG(width: 32, height: 32)
        var card = VCard(fullName: "Carol Danvers", nickname: "Cee", emails: ["carol@example.org"], url: "https://example.org/carol", description: "Pilot")
        card.photo = VCard.Photo(type: "image/png", data: photo)
        try await carol.setVCard(card)
        let own = try await carol.vCard()
        #expect(own.fullName == "Carol Danvers" && own.nickname == "Cee" && own.emails == ["carol@example.org"])
        #expect(own.url == "https://example.org/carol" && own.description == "Pilot" && own.photo?.data == photo)

        // Carol's client announces the new photo's hash in presence (XEP-0153 §3.2): Dave's
        // client sees a hash it has no card for and fetches the card by itself.
        try await eventually("Dave's client fetched Carol's vCard") {
            let profile = await dave.profile(of: jid("carol"))
            return profile?.vcardFullName == "Carol Danvers" && profile?.vcardPhotoHash == hexSHA1(photo)
        }
        let seen = try await dave.vCard(of: jid("carol"))
        #expect(seen.fullName == "Carol Danvers" && seen.photo?.data == photo)
        #expect(await dave.displayName(for: jid("carol")) == "Cee")
        #expect(await dave.avatar(of: jid("carol"))?.data == photo)
        // Someone who is not there has an empty card or a refusal, never a crash.
        _ = try? await dave.vCard(of: jid("nobody"))
        await carol.disconnect()
        await dave.disconnect()
    }

    @Test func bookmarksAreAddedListedAndRemovedWithXEP0402AndWithXEP0048() async throws {
        for user in ["erin", "legacy@legacy.localhost"] {
            let (client, _) = try SharedProsody.client(user)
            try await client.connect()
            #expect(try await client.bookmarks() == [], "\(user)")
            let tea = Bookmark(jid: try JID("tea@conference.localhost"), name: "Tea room", nick: "E", autojoin: true, password: "secret")
            let work = Bookmark(jid: try JID("work@conference.localhost"), name: nil, nick: nil, autojoin: false)
            try await client.addBookmark(work)
            try await client.addBookmark(tea)
            #expect(try await client.bookmarks() == [tea, work], "\(user)")
            var renamed = work
            renamed.name = "Work"
            try await client.addBookmark(renamed)
            #expect(try await client.bookmarks() == [tea, renamed], "\(user)")
            #expect(try await client.removeBookmark(tea.jid))
            #expect(try await !client.removeBookmark(tea.jid))
            #expect(try await client.bookmarks() == [renamed], "\(user)")
            await #expect(throws: ProfileError.self) { try await client.addBookmark(Bookmark(jid: try JID("conference.localhost"))) }
            await client.disconnect()
        }
    }

    @Test func lastActivityOfAFriendAndARefusalForAStranger() async throws {
        let (grace, graceEvents) = try SharedProsody.client("grace")
        let (heidi, heidiEvents) = try SharedProsody.client("heidi")
        let (ivan, _) = try SharedProsody.client("ivan")
        try await grace.connect()
        try await heidi.connect()
        try await ivan.connect()
        try await makeFriends(grace, jid("grace"), graceEvents, heidi, jid("heidi"), heidiEvents)
        await heidi.setStatus(.unavailable, text: "gone fishing")
        try await heidi.settle()
        await heidi.disconnect()
        let last = try await grace.lastActivity(of: jid("heidi"))
        #expect(last.seconds >= 0 && last.seconds < 60 && last.status == "gone fishing", "\(last)")
        await #expect(throws: LastActivityError.refused(StanzaError(.forbidden, type: .auth))) { try await ivan.lastActivity(of: jid("heidi")) }
        await grace.disconnect()
        await ivan.disconnect()
    }

    @Test func clientStateIndicationHoldsPresenceUntilActiveAndIsSaidAgainAfterReconnecting() async throws {
        let prosody = try SharedProsody.prosody
        let (judy, judyEvents) = try SharedProsody.client("judy")
        let (kim, kimEvents) = try SharedProsody.client("kim")
        try await judy.connect()
        try await kim.connect()
        try await makeFriends(judy, jid("judy"), judyEvents, kim, jid("kim"), kimEvents)
        #expect(await judy.xmpp.supportsClientStateIndication)

        func kimsStatusHeldBack(_ text: String) async throws {
            #expect(await judy.setActive(false))
            // Judy's own traffic (the answer to this ping) makes Prosody flush and stay
            // active for a moment (csi_resume_inactive_delay, 0.2 s here).
            try await judy.settle()
            try await Task.sleep(for: .milliseconds(500))
            await kim.setStatus(.away, text: text)
            try await kim.settle()
            try await Task.sleep(for: .milliseconds(400))
            // mod_csi_simple holds unimportant stanzas for an inactive client.
            #expect(!judyEvents.all.contains { if case .presence(let p) = $0 { p.status == text } else { false } }, "presence held back")
            #expect(await judy.setActive(true))
            try await judyEvents.next("Kim's presence once active") { if case .presence(let p) = $0 { p.status == text } else { false } }
        }
        try await kimsStatusHeldBack("lunch")
        // After a reconnect the state is said again: still inactive, still held back.
        await judy.setActive(false)
        await judy.disconnect()
        try await judy.connect()
        try await judy.settle()
        // The new session's own start-up traffic (roster, carbons, the archive catch-up, in
        // tasks of their own) makes Prosody flush and stay active for a moment, as above:
        // wait it out. Each catch-up waits for the one before it, so the second one here
        // ends after the session's own, even if that one started after the first.
        try await judy.synchronize()
        try await judy.synchronize()
        try await judy.settle()
        try await Task.sleep(for: .milliseconds(500))
        await kim.setStatus(.away, text: "back soon")
        try await kim.settle()
        try await Task.sleep(for: .milliseconds(400))
        #expect(!judyEvents.all.contains { if case .presence(let p) = $0 { p.status == "back soon" } else { false } }, "held back after reconnecting")
        await judy.setActive(true)
        try await judyEvents.next("Kim's presence") { if case .presence(let p) = $0 { p.status == "back soon" } else { false } }
        #expect(prosody.logTail(lines: 2000).contains("Holding buffer"))
        await judy.disconnect()
        await kim.disconnect()
    }
}

/// Publishes an item as a misbehaving client would, bypassing the library's checks.
/// Lower-case hex SHA-1, as avatar ids are written.
func hexSHA1(_ bytes: [UInt8]) -> String {
    ((try? HashFunction.sha1.digest(bytes)) ?? []).map { String(format: "%02x", $0) }.joined()
}

func publishRaw(_ client: ChatClient, node: String, id: String, payload: XMLElement) async throws {
    let item = XMLElement("item", namespace: "http://jabber.org/protocol/pubsub", ["id": id], [payload])
    let publish = XMLElement("publish", namespace: "http://jabber.org/protocol/pubsub", ["node": node], [item])
    _ = try await client.xmpp.request(XMLElement("iq", namespace: XMLNamespace.client, ["type": "set"], [
        XMLElement("pubsub", namespace: "http://jabber.org/protocol/pubsub", [:], [publish]),
    ]))
}

extension ProsodyProfileScenarioTests {
    /// The profile commands of `parley`, one-shot and in the chat, against Prosody.
    @Test(.enabled(if: CLI.executable != nil, "the parley executable is built next to the tests"))
    func profileAndBookmarkCommandsOfTheCLI() async throws {
        let prosody = try SharedProsody.prosody
        let cli = try CLI(home: prosody.directory + "/home", port: prosody.port, fingerprint: prosody.fingerprint)
        try cli.writeConfig("cli", password: SharedProsody.password("cli"))
        let config = cli.config("cli")
        // Friends first, through the library.
        let (me, meEvents) = try SharedProsody.client("cli")
        let (friend, friendEvents) = try SharedProsody.client("clifriend", resource: "desk")
        try await me.connect()
        try await friend.connect()
        try await makeFriends(me, jid("cli"), meEvents, friend, jid("clifriend"), friendEvents)
        await me.disconnect()
        try await friend.setNickname("Friendly")
        let picture = samplePNG(width: 16, height: 16)
        try await friend.setAvatar(picture)

        var result = try await cli.run(["nick", "Cli User", "--config", config])
        #expect(result.status == 0 && result.stdout == "nickname set to Cli User\n", "\(result.stderr)")
        let file = cli.home + "/me.png"
        try Data(samplePNG(width: 8, height: 8)).write(to: URL(fileURLWithPath: file))
        result = try await cli.run(["avatar", "set", file, "--config", config])
        #expect(result.status == 0 && result.stdout.hasPrefix("avatar set ("), "\(result.stderr)")
        try Data("not a picture".utf8).write(to: URL(fileURLWithPath: cli.home + "/notes.txt"))
        result = try await cli.run(["avatar", "set", cli.home + "/notes.txt", "--config", config])
        #expect(result.status == 1 && result.stderr == "parley: not a PNG, JPEG, GIF or WebP image\n", "\(result.stderr)")

        result = try await cli.run(["avatar", "get", "clifriend@localhost", cli.home + "/friend.png", "--config", config])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: cli.home + "/friend.png")) == Data(picture))

        result = try await cli.run(["whois", "clifriend@localhost", "--config", config])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("Friendly (clifriend@localhost)\n"), "\(result.stdout)")
        #expect(result.stdout.contains("  avatar:     \(hexSHA1(picture)) (image/png, \(picture.count) bytes)"), "\(result.stdout)")
        #expect(result.stdout.contains("  online:     desk (available), Parley 0.1.0"), "\(result.stdout)")
        result = try await cli.run(["roster", "--config", config])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Friendly (clifriend@localhost)  friends"), "\(result.stdout)\(result.stderr)")

        result = try await cli.run(["bookmarks", "add", "tea@conference.localhost", "Tea", "room", "--config", config])
        #expect(result.status == 0 && result.stdout == "bookmarked tea@conference.localhost\n", "\(result.stderr)")
        result = try await cli.run(["bookmarks", "--config", config])
        #expect(result.stdout == "Tea room tea@conference.localhost  (autojoin)\n", "\(result.stdout)")
        result = try await cli.run(["bookmarks", "remove", "tea@conference.localhost", "--config", config])
        #expect(result.status == 0, "\(result.stderr)")
        result = try await cli.run(["bookmarks", "remove", "tea@conference.localhost", "--config", config])
        #expect(result.status == 4 && result.stderr == "parley: no bookmark for tea@conference.localhost\n", "\(result.stderr)")

        // Offline: last activity instead of devices.
        await friend.setStatus(.unavailable, text: "see you")
        try await friend.settle()
        await friend.disconnect()
        result = try await cli.run(["whois", "clifriend@localhost", "--config", config])
        #expect(result.stdout.contains("  last seen:  ") && result.stdout.contains("ago — \"see you\""), "\(result.stdout)")

        // The same in the chat.
        let chat = try TerminalSession(cli, ["chat", "--config", config], name: "cli", password: SharedProsody.password("cli"))
        defer { chat.end() }
        do {
            try await chat.waitFor("type /help for commands")
            try chat.type("/help")
            try await chat.waitFor("/avatar set FILE")
            try chat.type("/nick Cli Again")
            try await chat.waitFor("nickname set to Cli Again")
            try chat.type("/whois clifriend@localhost")
            try await chat.waitFor("Friendly (clifriend@localhost)")
            try chat.type("/avatar set /nonexistent.png")
            try await chat.waitFor("cannot read /nonexistent.png")
            try chat.type("/bookmarks")
            try await chat.waitFor("no bookmarks")
            try chat.type("/quit")
            #expect(try await chat.waitForExit() == 0)
        } catch {
            print("--- the chat's terminal ---\n\(chat.screen)")
            throw error
        }
    }
}
