import Logging
import ParleyCore
import ParleyMUC
import ParleyServer
import Testing

/// Helpers for the XEP-0045 scenarios: a server with the MUC service at
/// `conference.localhost`, entering rooms, and matchers for room presence.
enum MUC {
    static let service = "conference.localhost"
    static let muc = "http://jabber.org/protocol/muc"
    static let user = "http://jabber.org/protocol/muc#user"
    static let owner = "http://jabber.org/protocol/muc#owner"
    static let occupantID = "urn:xmpp:occupant-id:0"

    static func with<T>(
        creators: Set<JID>? = nil, _ configure: (inout MUCService.Settings) -> Void = { _ in }, _ body: (TestServer) async throws -> T
    ) async throws -> T {
        var settings = MUCService.Settings(domain: service, serverDomain: TestServer.domain, creators: creators)
        // Scenarios about something else run without archives, so the status codes they
        // check are those of their subject (archiving adds 170); MUCArchiveScenarios turn
        // it on, as parleyd's configuration does by default.
        settings.archiveByDefault = false
        configure(&settings)
        let muc = MUCService(settings: settings, logger: Logger(label: "parley.scenario.muc"))
        return try await TestServer.with(accounts: TestServer.threeAccounts, hostedServices: [muc], { _ in }, body)
    }

    /// `client` creates `room` as an instant room (XEP-0045 §10.1.2) under `nick`; its
    /// self-presence has `codes` (110 and 201, and 170 when the service archives by default).
    static func createInstantRoom(_ client: TestClient, _ room: String, nick: String, codes: [Int]? = nil) async throws {
        let entered = try await client.enter(room, nick: nick)
        let expected = codes ?? [110, 201]
        #expect(entered.own.statusCodes.filter { codes != nil || $0 != 170 } == expected, "\(entered.own.xmlString())")
        let reply = try await client.query(
            "<iq type='set' id='instant' to='\(room)@\(service)'><query xmlns='\(owner)'><x xmlns='jabber:x:data' type='submit'/></query></iq>",
            id: "instant")
        #expect(reply.type == "result", "\(reply.xmlString())")
    }
}

extension TestClient {
    /// What entering a room brings: the others' presence, one's own, the history, then the
    /// subject.
    struct RoomEntry {
        var others: [XMLElement]
        var own: XMLElement
        var history: [XMLElement]
        var subject: XMLElement
    }

    /// Sends presence to `room@conference.localhost/nick` and reads up to the subject,
    /// which XEP-0045 §7.2.15 makes the last thing a newcomer gets.
    func enter(_ room: String, nick: String, extra: String = "") async throws -> RoomEntry {
        try await send("<presence to='\(room)@\(MUC.service)/\(nick)'><x xmlns='\(MUC.muc)'/>\(extra)</presence>")
        return try await enterReplies()
    }

    /// Reads what entering a room brings, up to the subject.
    func enterReplies() async throws -> RoomEntry {
        var presences: [XMLElement] = []
        var history: [XMLElement] = []
        while true {
            let element = try await nextElement()
            if element.name == "message", element.firstChild("subject") != nil {
                guard let own = presences.last, own.statusCodes.contains(110) else {
                    throw ScenarioFailure("no self-presence before the subject: \(presences.map { $0.xmlString() })")
                }
                return RoomEntry(others: presences.dropLast(), own: own, history: history, subject: element)
            }
            if element.name == "message", element.type == "groupchat", presences.last?.statusCodes.contains(110) == true {
                history.append(element)
                continue
            }
            guard element.name == "presence", element.type == nil, history.isEmpty else {
                throw ScenarioFailure("expected room presence, got \(element.xmlString())")
            }
            presences.append(element)
        }
    }

    /// The next element must be presence from `room/nick`; returns it.
    @discardableResult
    func expectRoomPresence(
        _ room: String, _ nick: String, type: String? = nil, codes: [Int] = [], sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> XMLElement {
        let presence = try await expect("presence")
        #expect(
            presence.from == "\(room)@\(MUC.service)/\(nick)" && presence.type == type && presence.statusCodes == codes,
            "got \(presence.xmlString())", sourceLocation: sourceLocation)
        return presence
    }
}

extension XMLElement {
    /// The XEP-0045 status codes in a room stanza's `<x xmlns='…muc#user'/>`.
    var statusCodes: [Int] {
        (firstChild("x", namespace: MUC.user)?.children("status", namespace: MUC.user) ?? []).compactMap {
            $0[attribute: "code"].flatMap(Int.init)
        }.sorted()
    }

    /// The `<item/>` of a room presence.
    var mucItem: XMLElement? { firstChild("x", namespace: MUC.user)?.firstChild("item", namespace: MUC.user) }

    var occupantID: String? { firstChild("occupant-id", namespace: MUC.occupantID)?[attribute: "id"] }
}
