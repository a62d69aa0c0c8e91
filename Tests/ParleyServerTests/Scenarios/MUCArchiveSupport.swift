import Foundation
import ParleyCore
import ParleyMUC
import Testing

/// Helpers for the XEP-0313 room-archive scenarios: a service that archives by default,
/// queries to a room's archive, and what they bring back.
extension MUC {
    static let mam = "urn:xmpp:mam:2"

    /// A MUC server whose new rooms archive (parleyd's default).
    static func archiving<T>(_ configure: @escaping (inout MUCService.Settings) -> Void = { _ in }, _ body: (TestServer) async throws -> T)
        async throws -> T
    {
        try await with({ settings in
            settings.archiveByDefault = true
            // These scenarios fill archives with bursts of a hundred messages from one
            // occupant; the rate limit has its own scenarios.
            settings.rateLimit = MUCRateLimit(messagesPerSecond: 1_000_000, burst: 1_000_000)
            configure(&settings)
        }, body)
    }

    /// The room's configuration form submitted with `fields`.
    static func configure(_ client: TestClient, _ room: String, _ fields: String) async throws {
        let form = "<x xmlns='jabber:x:data' type='submit'>\(fields)</x>"
        let reply = try await client.query(
            "<iq type='set' id='cfg' to='\(room)@\(service)'><query xmlns='\(owner)'>\(form)</query></iq>", id: "cfg")
        #expect(reply.type == "result", "\(reply.xmlString())")
    }
}

/// One archive query's answer: the results in the order they came, then the iq.
struct ArchiveAnswer {
    var results: [XMLElement]
    var iq: XMLElement

    /// The forwarded messages.
    var messages: [XMLElement] {
        results.compactMap {
            $0.firstChild("result", namespace: MUC.mam)?.firstChild("forwarded", namespace: XMLNamespace.forward)?.firstChild("message")
        }
    }
    var bodies: [String] { messages.compactMap { $0.firstChild("body")?.text } }
    var ids: [String] { results.compactMap { $0.firstChild("result", namespace: MUC.mam)?[attribute: "id"] } }
    var fin: XMLElement? { iq.firstChild("fin", namespace: MUC.mam) }
    var complete: Bool { fin?[attribute: "complete"] == "true" }
    private func rsm(_ name: String) -> String? {
        fin?.firstChild("set", namespace: XMLNamespace.resultSetManagement)?.firstChild(name, namespace: XMLNamespace.resultSetManagement)?.text
    }
    var first: String? { rsm("first") }
    var last: String? { rsm("last") }
    var count: Int? { rsm("count").flatMap(Int.init) }
}

extension TestClient {
    /// Queries `room`'s archive with the form `fields` and the RSM `set`, and reads the
    /// results up to the iq that ends them.
    func queryRoomArchive(_ room: String, fields: String = "", set: String = "", flip: Bool = false, queryID: String = "q") async throws
        -> ArchiveAnswer
    {
        let form = fields.isEmpty ? "" : "<x xmlns='jabber:x:data' type='submit'><field var='FORM_TYPE' type='hidden'><value>\(MUC.mam)</value></field>\(fields)</x>"
        let rsm = set.isEmpty ? "" : "<set xmlns='http://jabber.org/protocol/rsm'>\(set)</set>"
        try await send("<iq type='set' id='mam-\(queryID)' to='\(room)@\(MUC.service)'><query xmlns='\(MUC.mam)' queryid='\(queryID)'>\(form)\(rsm)\(flip ? "<flip-page/>" : "")</query></iq>")
        var results: [XMLElement] = []
        while true {
            let element = try await nextElement()
            if element.name == "iq", element.id == "mam-\(queryID)" { return ArchiveAnswer(results: results, iq: element) }
            // A room notice (a configuration change) may come between the results.
            if element.name == "message", element.type == "groupchat", element.from == "\(room)@\(MUC.service)" { continue }
            guard element.name == "message", element.firstChild("result", namespace: MUC.mam)?[attribute: "queryid"] == queryID else {
                throw ScenarioFailure("expected an archive result, got \(element.xmlString())")
            }
            results.append(element)
        }
    }

    /// Sends groupchat messages with these bodies (ids the same) and reads each back.
    func say(_ bodies: [String], in room: String) async throws {
        for body in bodies {
            try await send("<message to='\(room)@\(MUC.service)' type='groupchat' id='\(body)'><body>\(body)</body></message>")
            try await expectMessage(id: body)
        }
    }
}
