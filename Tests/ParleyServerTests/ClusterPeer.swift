import Foundation
import NIOConcurrencyHelpers
import ParleyCore

/// One user of the cluster test: a raw XMPP client (`TestClient`) with XEP-0198 done by
/// hand, so the test knows exactly which of its messages the server acknowledged (`<a h/>`
/// counts the stanzas it handled), and which messages reached it, with their XEP-0359
/// stanza-ids. After its node dies it signs in again (through the load balancer, so on
/// another node), sends initial presence (stored messages come) and catches up from its
/// archive (MAM) like any client that lost its session.
final class ClusterPeer: @unchecked Sendable {
    struct Received: Sendable {
        var stanzaIDs: [String] = []
        var viaArchive = 0
    }

    private struct State {
        var client: TestClient?
        var connected = false
        /// Stanzas sent since `<enable/>`, and which of them were messages (by count).
        var sent: UInt32 = 0
        var messageAt: [UInt32: String] = [:]
        var acknowledged = Set<String>()
        var received: [String: Received] = [:]
        var availableFrom = Set<String>()
        var mamDone: [String: Bool] = [:]
        var connections = 0
        /// The last presence from each room occupant JID (ClusterKillRoom).
        var roomPresence: [String: XMLElement] = [:]
    }

    let user: String
    let port: Int
    let fingerprint: String
    private let state = NIOLockedValueBox(State())
    static let sm = "urn:xmpp:sm:3"
    static let mam = "urn:xmpp:mam:2"

    init(user: String, port: Int, fingerprint: String) {
        self.user = user
        self.port = port
        self.fingerprint = fingerprint
    }

    var jid: String { "\(user)@localhost/r" }
    var isConnected: Bool { state.withLockedValue { $0.connected } }
    var acknowledged: Set<String> { state.withLockedValue { $0.acknowledged } }
    var received: [String: Received] { state.withLockedValue { $0.received } }
    var availableFrom: Set<String> { state.withLockedValue { $0.availableFrom } }
    var connections: Int { state.withLockedValue { $0.connections } }
    var roomPresence: [String: XMLElement] { state.withLockedValue { $0.roomPresence } }

    /// Signs in, enables stream management, sends initial presence, and reads from then on.
    func connect() async throws {
        let client = try await TestClient.connect(port: port, fingerprint: fingerprint)
        _ = try await client.login(user, password: "pw-" + user, resource: "r")
        try await client.send("<enable xmlns='urn:xmpp:sm:3'/>")
        _ = try await client.expect("enabled", namespace: Self.sm)
        state.withLockedValue { state in
            state.client = client
            state.connected = true
            state.sent = 0
            state.messageAt = [:]
            state.connections += 1
        }
        Task { await self.read(client) }
        try await sendStanza("<presence/>")
    }

    /// Signs in again until it works (the load balancer may still try the dead node).
    func reconnect(catchUpSince start: Date) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            do {
                try await connect()
                break
            } catch {
                guard ContinuousClock.now < deadline else { throw error }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        try await catchUp(since: start)
    }

    func sendMessage(to peer: String, id: String) async throws {
        try await sendStanza("<message to='\(peer)@localhost' type='chat' id='\(id)'><body>\(id)</body></message>", messageID: id)
        try await state.withLockedValue { $0.client }?.send("<r xmlns='urn:xmpp:sm:3'/>")
    }

    /// Sends an iq and waits for its answer.
    func request(_ xml: String, id: String) async throws {
        state.withLockedValue { $0.mamDone[id] = false }
        try await sendStanza(xml)
        let deadline = ContinuousClock.now + .seconds(20)
        while state.withLockedValue({ $0.mamDone[id] }) != true {
            guard ContinuousClock.now < deadline else { throw ScenarioFailure("\(user)'s iq \(id) got no answer") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func sendGroupchat(to room: String, id: String) async throws {
        try await sendStanza("<message to='\(room)' type='groupchat' id='\(id)'><body>\(id)</body></message>", messageID: id)
        try await state.withLockedValue { $0.client }?.send("<r xmlns='urn:xmpp:sm:3'/>")
    }

    func sendStanza(_ xml: String, messageID: String? = nil) async throws {
        // Counted and written under the lock's order: `h` counts stanzas in wire order.
        let client: TestClient? = state.withLockedValue { state in
            guard state.connected, let client = state.client else { return nil }
            state.sent += 1
            if let messageID { state.messageAt[state.sent] = messageID }
            client.sendUnwaited(xml)
            return client
        }
        guard client != nil else { throw ScenarioFailure("\(user) is not connected") }
    }

    /// XEP-0313: what the archive holds for this user since `start`, as it would fetch after
    /// losing its session; merged with what arrived live (by message id).
    private func catchUp(since start: Date) async throws {
        let id = "mam-\(UUID().uuidString.prefix(6))"
        state.withLockedValue { $0.mamDone[id] = false }
        let stamp = ISO8601DateFormatter().string(from: start)
        try await sendStanza(
            """
            <iq type='set' id='\(id)'><query xmlns='\(Self.mam)' queryid='\(id)'><x xmlns='jabber:x:data' type='submit'>\
            <field var='FORM_TYPE' type='hidden'><value>\(Self.mam)</value></field><field var='start'><value>\(stamp)</value></field></x>\
            <set xmlns='http://jabber.org/protocol/rsm'><max>1000</max></set></query></iq>
            """)
        let deadline = ContinuousClock.now + .seconds(20)
        while state.withLockedValue({ $0.mamDone[id] }) != true {
            guard ContinuousClock.now < deadline else { throw ScenarioFailure("\(user)'s archive query got no answer") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    private func read(_ client: TestClient) async {
        var handled: UInt32 = 0
        while true {
            guard let event = try? await client.next(timeout: .seconds(300)), case .element(let element) = event else { break }
            if element.namespace == Self.sm {
                if element.name == "r" {
                    client.sendUnwaited("<a xmlns='urn:xmpp:sm:3' h='\(handled)'/>")
                } else if element.name == "a", let h = element[attribute: "h"].flatMap(UInt32.init) {
                    state.withLockedValue { state in
                        guard state.client === client else { return }
                        for (count, id) in state.messageAt where count <= h {
                            state.acknowledged.insert(id)
                            state.messageAt[count] = nil
                        }
                    }
                }
                continue
            }
            guard ["message", "presence", "iq"].contains(element.name) else { continue }
            handled &+= 1
            switch element.name {
            case "message":
                if let result = element.firstChild("result", namespace: Self.mam),
                    let forwarded = result.firstChild("forwarded", namespace: "urn:xmpp:forward:0")?.firstChild("message")
                {
                    guard forwarded.to.map({ $0.hasPrefix(user + "@") }) == true else { continue }
                    record(forwarded, stanzaID: result[attribute: "id"] ?? "", archive: true)
                } else {
                    let stanzaID = element.children("stanza-id", namespace: "urn:xmpp:sid:0").first?[attribute: "id"] ?? ""
                    record(element, stanzaID: stanzaID, archive: false)
                }
            case "presence":
                if let from = element.from, from.contains("@conference.") {
                    state.withLockedValue { state in if state.client === client { state.roomPresence[from] = element } }
                }
                if element.type == nil, let from = element.from { state.withLockedValue { _ = $0.availableFrom.insert(from) } }
            default:
                if let id = element.id, element.type == "result" || element.type == "error" {
                    state.withLockedValue { state in if state.mamDone[id] != nil { state.mamDone[id] = true } }
                }
            }
        }
        state.withLockedValue { state in
            if state.client === client { state.connected = false }
        }
    }

    /// A client keeps one copy per stanza-id (XEP-0359): a message that came live and again
    /// from the archive, or again from offline storage, is one message.
    private func record(_ message: XMLElement, stanzaID: String, archive: Bool) {
        guard let id = message.id, message.firstChild("body") != nil else { return }
        state.withLockedValue { state in
            var entry = state.received[id] ?? Received()
            if archive {
                // The archive's id is the stanza-id the live copy carried.
                if entry.stanzaIDs.contains(stanzaID) { return }
                entry.viaArchive += 1
            }
            entry.stanzaIDs.append(stanzaID)
            state.received[id] = entry
        }
    }
}
