import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import ParleyCore
import ParleyTestSupport
import Testing

/// A BOSH client (XEP-0124/0206) for scenarios: each request is a real HTTP POST of a
/// `<body/>` written out in full, over loopback; answers are kept as text and parsed, and the
/// stanzas they carry queue up for `expect`, as `TestClient` does on TCP.
///
/// `request` posts one body and waits for its answer. `send` and `expect` behave as a browser
/// client (strophe.js): stanzas go out without waiting for the answer, which the server may
/// hold, at most two requests are outstanding, and an empty request keeps one open to
/// receive on.
final class BOSHTestClient: Sendable {
    static let httpbind = "http://jabber.org/protocol/httpbind"
    static let xbosh = "urn:xmpp:xbosh"

    struct Answer: Sendable {
        let status: Int
        let text: String
        let headers: HTTPHeaders
        /// Nil if the answer is not one well-formed `<body/>`.
        let body: XMLElement?

        var payload: [XMLElement] { body?.elements ?? [] }
        var isTerminate: Bool { body?[attribute: "type"] == "terminate" }
        var condition: String? { body?[attribute: "condition"] }
    }

    let port: Int
    let path: String
    /// The `wait` sessions are created with: short, so that polls come back quickly, or long
    /// where a held request must stay held however slow the machine.
    let wait: Int
    private struct State {
        var rid: UInt64
        var sid: String?
        var received: [XMLElement] = []
        var outstanding = 0
        /// When the last answer came back (the server's inactivity count starts no later).
        var lastAnswered = ContinuousClock.now
        /// The answer that ended the session, or why a request failed.
        var ended: String?
    }

    private let state: NIOLockedValueBox<State>

    init(port: Int, path: String = "/http-bind", rid: UInt64 = 4_000_000, wait: Int = 2) {
        self.port = port
        self.path = path
        self.wait = wait
        state = NIOLockedValueBox(State(rid: rid))
    }

    var sid: String? { state.withLockedValue { $0.sid } }
    /// The rid the next `request` will use.
    var nextRID: UInt64 { state.withLockedValue { $0.rid } }

    /// Takes a rid as a client does for each new request.
    func takeRID() -> UInt64 {
        state.withLockedValue { state in
            defer { state.rid += 1 }
            return state.rid
        }
    }

    // MARK: Requests

    /// POSTs `text` as it is.
    static func post(port: Int, path: String = "/http-bind", _ text: String, method: HTTPMethod = .POST, headers: [(String, String)] = [])
        async throws -> Answer
    {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        request.headers.add(name: "Content-Type", value: "text/xml; charset=utf-8")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if method == .POST { request.body = .bytes(ByteBuffer(string: text)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let text = String(buffer: try await response.body.collect(upTo: 64 << 20))
        return Answer(status: Int(response.status.code), text: text, headers: response.headers, body: parse(text))
    }

    func post(_ text: String) async throws -> Answer {
        let answer = try await Self.post(port: port, path: path, text)
        state.withLockedValue { state in
            state.received += answer.payload.filter { !($0.name == "error" && $0.namespace == XMLNamespace.streams) }
            if answer.isTerminate { state.ended = answer.text }
        }
        return answer
    }

    /// Posts without waiting for the answer, which queues its stanzas when it comes.
    private func launch(_ text: String) {
        state.withLockedValue { $0.outstanding += 1 }
        Task {
            let failure: String?
            do {
                _ = try await post(text)
                failure = nil
            } catch {
                failure = "a request failed: \(error)"
            }
            state.withLockedValue { state in
                state.outstanding -= 1
                state.lastAnswered = ContinuousClock.now
                if let failure, state.ended == nil { state.ended = failure }
            }
        }
    }

    /// How the session ended, once it has.
    var ended: String? { state.withLockedValue { $0.ended } }

    /// `<body rid sid xmlns …>payload</body>` with the next rid (or `rid`), posted.
    @discardableResult
    func request(_ payload: String = "", attributes: String = "", rid: UInt64? = nil) async throws -> Answer {
        try await post(body(payload, attributes: attributes, rid: rid ?? takeRID()))
    }

    func body(_ payload: String = "", attributes: String = "", rid: UInt64) -> String {
        let sid = self.sid.map { " sid='\($0)'" } ?? ""
        let open = "<body xmlns='\(Self.httpbind)' rid='\(rid)'\(sid)\(attributes.isEmpty ? "" : " " + attributes)"
        return payload.isEmpty ? open + "/>" : open + ">" + payload + "</body>"
    }

    /// The session creation request strophe.js 1.2.14 sends (`content`, `ver`, `xmpp:version`).
    @discardableResult
    func create(wait: Int? = nil, hold: Int = 1, extra: String = "") async throws -> Answer {
        let wait = wait ?? self.wait
        let answer = try await request(
            attributes: "to='\(TestServer.domain)' xml:lang='en' wait='\(wait)' hold='\(hold)' content='text/xml; charset=utf-8' "
                + "ver='1.6' xmpp:version='1.0' xmlns:xmpp='\(Self.xbosh)'" + (extra.isEmpty ? "" : " " + extra))
        if let sid = answer.body?[attribute: "sid"] { state.withLockedValue { $0.sid = sid } }
        return answer
    }

    // MARK: Stanzas

    /// The next stanza from the server; while none has come, an empty request stays open.
    func next(timeout: Duration = .seconds(10)) async throws -> XMLElement {
        let deadline = ContinuousClock.now + timeout
        while true {
            let (next, ended, idle) = state.withLockedValue { state -> (XMLElement?, String?, Bool) in
                (state.received.isEmpty ? nil : state.received.removeFirst(), state.ended, state.outstanding == 0)
            }
            if let next { return next }
            if let ended { throw ScenarioFailure("the session ended: \(ended)") }
            guard ContinuousClock.now < deadline else { throw ScenarioFailure("nothing came within \(timeout)") }
            if idle, sid != nil { launch(body(rid: takeRID())) }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The next stanza, which must be a `<name/>`.
    func expect(_ name: String, namespace: String? = nil, timeout: Duration = .seconds(10)) async throws -> XMLElement {
        let element = try await next(timeout: timeout)
        guard element.name == name, namespace == nil || element.namespace == namespace else {
            throw ScenarioFailure("expected <\(name)/>, got \(element.xmlString())")
        }
        return element
    }

    /// Like `expect`, skipping XEP-0198 `<r/>`s.
    func expectIgnoringAckRequests(_ name: String, namespace: String? = nil) async throws -> XMLElement {
        while true {
            let element = try await next()
            if element.name == "r", element.namespace == "urn:xmpp:sm:3" { continue }
            guard element.name == name, namespace == nil || element.namespace == namespace else {
                throw ScenarioFailure("expected <\(name)/>, got \(element.xmlString())")
            }
            return element
        }
    }

    /// Stanzas received and not yet taken by `expect`.
    var pending: [XMLElement] { state.withLockedValue { $0.received } }

    /// Sends stanzas in one request, not waiting for its answer (at most two outstanding).
    func send(_ stanzas: String, attributes: String = "") async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while state.withLockedValue({ $0.outstanding >= 2 }) {
            guard ContinuousClock.now < deadline else { throw ScenarioFailure("two requests stayed outstanding for 10 s") }
            try await Task.sleep(for: .milliseconds(2))
        }
        launch(body(stanzas, attributes: attributes, rid: takeRID()))
    }

    /// Until every request sent has its answer.
    /// When the last answer to a request came back.
    var lastAnswered: ContinuousClock.Instant { state.withLockedValue { $0.lastAnswered } }

    func settle() async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while state.withLockedValue({ $0.outstanding > 0 }) {
            guard ContinuousClock.now < deadline else { throw ScenarioFailure("requests stayed outstanding for 10 s") }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    func query(_ iq: String, id: String) async throws -> XMLElement {
        try await send(iq)
        let reply = try await expect("iq")
        guard reply[attribute: "id"] == id else { throw ScenarioFailure("expected the reply to '\(id)', got \(reply.xmlString())") }
        return reply
    }

    // MARK: Logging in

    /// Creation, SASL PLAIN (loopback counts as confidential), restart: the features offered
    /// for binding.
    @discardableResult
    func authenticate(_ username: String, password: String? = nil) async throws -> XMLElement {
        let created = try await create()
        guard created.body?[attribute: "sid"] != nil else { throw ScenarioFailure("no session: \(created.text)") }
        _ = try await expect("features", namespace: XMLNamespace.streams)
        let secret = password ?? TestServer.threeAccounts[username] ?? ""
        let credentials = Data("\u{0}\(username)\u{0}\(secret)".utf8).base64EncodedString()
        try await send("<auth xmlns='\(XMLNamespace.sasl)' mechanism='PLAIN'>\(credentials)</auth>")
        _ = try await expect("success", namespace: XMLNamespace.sasl)
        try await send("", attributes: "to='\(TestServer.domain)' xml:lang='en' xmpp:restart='true' xmlns:xmpp='\(Self.xbosh)'")
        return try await expect("features", namespace: XMLNamespace.streams)
    }

    /// Authenticates and binds; returns the full JID.
    @discardableResult
    func login(_ username: String, resource: String = "bosh") async throws -> String {
        try await authenticate(username)
        let reply = try await query(
            "<iq xmlns='jabber:client' type='set' id='bind'><bind xmlns='\(XMLNamespace.bind)'><resource>\(resource)</resource></bind></iq>",
            id: "bind")
        guard reply[attribute: "type"] == "result", let jid = reply.firstChild("bind", namespace: XMLNamespace.bind)?.firstChild("jid")?.text else {
            throw ScenarioFailure("bind failed: \(reply.xmlString())")
        }
        return jid
    }

    // MARK: Parsing

    /// One `<body/>` document, parsed as the server parses requests.
    static func parse(_ text: String) -> XMLElement? {
        var text = Substring(text)
        while text.first?.isWhitespace == true { text = text.dropFirst() }
        guard !text.isEmpty else { return nil }
        let parser = XMLStreamParser(limits: .init(maxStanzaBytes: 32 << 20, maxDepth: 64))
        guard (try? parser.feed(Array("<stream:stream xmlns='jabber:client' xmlns:stream='\(XMLNamespace.streams)'>".utf8))) != nil,
            let events = try? parser.feed(Array(text.utf8)), events.count == 1, case .stanza(let body) = events[0],
            parser.isBetweenStanzas
        else { return nil }
        return body
    }
}
