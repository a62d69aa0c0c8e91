import Metrics
import ParleyCore

/// The server's metrics, created once so the hot path only increments. Exported by
/// `/metrics` when a Prometheus factory is bootstrapped; no-ops otherwise. A class: as a
/// struct, each count of a stanza written copied the whole set (a dozen references retained
/// and released, on every event loop at once).
public final class ServerMetrics: Sendable {
    let connectionsAccepted = Counter(label: "parley_connections_total")
    let connectionsOpen = Meter(label: "parley_connections_open")
    let connectionsRefused = Counter(label: "parley_connections_refused_total")
    let sessionsAuthenticated = Meter(label: "parley_sessions_authenticated")
    let authFailures = Counter(label: "parley_auth_failures_total")
    let authSuccesses = Counter(label: "parley_auth_successes_total")
    /// Messages not routed again because their sender had already sent that origin-id.
    let duplicateMessages = Counter(label: "parley_duplicate_messages_total")
    private let stanzasIn: [String: Counter]
    private let stanzasOut: [String: Counter]
    private let messagesOut: Counter
    private let presencesOut: Counter
    private let streamErrors: [StreamErrorCondition: Counter]

    public init() {
        var stanzasIn: [String: Counter] = [:]
        var stanzasOut: [String: Counter] = [:]
        for kind in ["message", "presence", "iq", "other"] {
            stanzasIn[kind] = Counter(label: "parley_stanzas_in_total", dimensions: [("kind", kind)])
            stanzasOut[kind] = Counter(label: "parley_stanzas_out_total", dimensions: [("kind", kind)])
        }
        self.stanzasIn = stanzasIn
        self.stanzasOut = stanzasOut
        messagesOut = stanzasOut["message"]!
        presencesOut = stanzasOut["presence"]!
        var streamErrors: [StreamErrorCondition: Counter] = [:]
        for condition in StreamErrorCondition.allCases {
            streamErrors[condition] = Counter(
                label: "parley_stream_errors_total", dimensions: [("condition", condition.rawValue)])
        }
        self.streamErrors = streamErrors
    }

    func stanzaIn(_ name: String) { (stanzasIn[name] ?? stanzasIn["other"])?.increment() }
    /// Called for every stanza written: the common kinds without hashing their name.
    func stanzaOut(_ name: String) {
        switch name {
        case "message": messagesOut.increment()
        case "presence": presencesOut.increment()
        default: (stanzasOut[name] ?? stanzasOut["other"])?.increment()
        }
    }
    func streamError(_ condition: StreamErrorCondition) { streamErrors[condition]?.increment() }
}
