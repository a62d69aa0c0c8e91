import Foundation
import ParleyCore
import ParleyServer
import Synchronization

/// A hosted service for routing scenarios: it records what reaches it, answers disco#info
/// of its domain, echoes messages back to their sender, and sends whatever a test asks.
final class RecordingService: HostedService {
    enum Event: Sendable {
        case stanza(XMLElement, from: JID)
        case sessionEnded(JID)
    }

    let domain: String
    let name = "Recorder"
    private let outlet = Mutex<HostedServiceOutlet?>(nil)
    private let events = Mutex<[Event]>([])

    init(domain: String = "service.localhost") {
        self.domain = domain
    }

    func start(_ outlet: HostedServiceOutlet) async throws {
        self.outlet.withLock { $0 = outlet }
    }

    func receive(_ stanza: XMLElement, from sender: JID) {
        events.withLock { $0.append(.stanza(stanza, from: sender)) }
        if stanza.name == "iq", stanza.type == "get", stanza.to == domain,
            stanza.firstChild("query", namespace: XMLNamespace.discoInfo) != nil
        {
            var query = XMLElement("query", namespace: XMLNamespace.discoInfo)
            query.append(XMLElement("identity", ["category": "component", "type": "generic", "name": name]))
            return send(stanza.iqResult(query))
        }
        if stanza.name == "message", stanza.type != "error", let body = stanza.firstChild("body")?.text {
            var echo = XMLElement(
                "message", namespace: XMLNamespace.client,
                ["from": stanza.to ?? domain, "to": sender.description, "type": stanza.type ?? "normal"])
            echo.append(XMLElement("body", text: "echo: \(body)"))
            send(echo)
        }
    }

    func sessionEnded(_ session: JID) {
        events.withLock { $0.append(.sessionEnded(session)) }
    }

    func send(_ stanza: XMLElement) {
        outlet.withLock { $0 }?.send(stanza)
    }

    var received: [Event] { events.withLock { $0 } }

    /// Waits until an event matching `predicate` was recorded; returns it.
    @discardableResult
    func waitFor(_ what: String, timeout: Duration = .seconds(5), _ predicate: (Event) -> Bool) async throws -> Event {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let event = received.first(where: predicate) { return event }
            guard ContinuousClock.now < deadline else {
                throw ScenarioFailure("the service never got \(what); it got \(received)")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The stanzas recorded, with the JID each came from.
    var stanzas: [(XMLElement, JID)] {
        received.compactMap { if case .stanza(let stanza, let from) = $0 { (stanza, from) } else { nil } }
    }
}
