import Foundation
@testable import ParleyClient
import ParleyCore
import Testing

/// The pieces of group chat that need no server: mentions, removal reasons from status
/// codes, and the cache keeping room messages apart from one-to-one chats.
@Suite struct RoomUnitTests {
    @Test func aMentionIsTheNicknameAsAWordInAnyCase() {
        #expect(ChatClient.mentions("hi Bob!", "Bob"))
        #expect(ChatClient.mentions("bob: look", "Bob"))
        #expect(ChatClient.mentions("ask Anne-Marie", "Anne-Marie"))
        #expect(!ChatClient.mentions("Bobby was here", "Bob"))
        #expect(!ChatClient.mentions("kebob", "Bob"))
        #expect(!ChatClient.mentions("anything", ""))
    }

    @Test func removalsFromStatusCodesAndDestroy() throws {
        let user = RoomNamespace.user
        let item = XMLElement(
            "item", namespace: user, ["role": "none"],
            [XMLElement("actor", namespace: user, ["nick": "Mod"]), XMLElement("reason", namespace: user, text: "spam")])
        let kicked = XMLElement("x", namespace: user, [:], [item])
        #expect(ChatClient.removal(x: kicked, item: item, codes: [307, 110]) == .kicked(by: "Mod", reason: "spam"))
        #expect(ChatClient.removal(x: kicked, item: item, codes: [301]) == .banned(by: "Mod", reason: "spam"))
        #expect(ChatClient.removal(x: nil, item: nil, codes: [321]) == .affiliationChanged)
        #expect(ChatClient.removal(x: nil, item: nil, codes: [322]) == .membersOnly)
        #expect(ChatClient.removal(x: nil, item: nil, codes: [332]) == .serviceShutdown)
        #expect(ChatClient.removal(x: nil, item: nil, codes: [110]) == nil)
        let destroyed = XMLElement(
            "x", namespace: user, [:],
            [XMLElement("destroy", namespace: user, ["jid": "new@conference.example.org"], [XMLElement("reason", namespace: user, text: "moved")])])
        let venue = try JID("new@conference.example.org")
        #expect(ChatClient.removal(x: destroyed, item: nil, codes: [110]) == .destroyed(reason: "moved", alternateVenue: venue))
    }

    /// A room message we wrote and no server acknowledged is never sent again as a
    /// one-to-one chat to the room's JID when the program starts again.
    @Test func roomMessagesStayOutOfOneToOneResendsAndShowAsRoomConversations() async throws {
        let path = NSTemporaryDirectory() + "parley-room-cache-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let cache = try ChatCache(path: path)
        let room = try JID("team@conference.example.org")
        let peer = try JID("bob@example.org")
        _ = try await cache.store(MessageRecord(peer: peer, direction: .outgoing, id: "chat-1", originID: "chat-1", body: "hi bob", timestamp: Date()))
        let mine = MessageRecord(peer: room, direction: .outgoing, id: "room-1", originID: "room-1", body: "hi all", timestamp: Date())
        #expect(try await cache.storeRoomMessage(mine, nick: "me") == (true, nil))
        #expect(try await cache.unacknowledgedOutgoing().map(\.id) == ["chat-1"])

        // The room's echo confirms ours once, and is no new message.
        var echo = mine
        echo.stanzaID = "archive-1"
        #expect(try await cache.storeRoomMessage(echo, nick: "me") == (false, "room-1"))
        #expect(try await cache.storeRoomMessage(echo, nick: "me") == (false, nil))
        let theirs = MessageRecord(peer: room, direction: .incoming, id: "x", stanzaID: "archive-2", body: "hello me", timestamp: Date())
        #expect(try await cache.storeRoomMessage(theirs, nick: "bob") == (true, nil))
        // History replayed on a rejoin carries the same room stanza id.
        #expect(try await cache.storeRoomMessage(theirs, nick: "bob") == (false, nil))

        let conversations = try await cache.conversations()
        let roomConversation = try #require(conversations.first { $0.peer == room })
        #expect(roomConversation.isRoom && roomConversation.unreadCount == 1 && roomConversation.lastMessage?.nick == "bob")
        #expect(conversations.first { $0.peer == peer }?.isRoom == false)
        #expect(try await cache.history(with: room).map { "\($0.nick ?? "?"): \($0.body) \($0.state)" } == ["me: hi all sent", "bob: hello me pending"])
    }
}
