import ParleyCore
import ParleyStorage

/// A service with a domain of its own on this server (multi-user chat at `conference.<domain>`,
/// later HTTP upload, pubsub): every stanza addressed to its domain or to any JID at it comes
/// to it, and every stanza it emits goes back through the router, so blocking, offline storage
/// and the other delivery rules apply to it as to a local session's stanzas.
///
/// Services live in their own targets; `parleyd` builds them from the configuration and hands
/// them to `RunningServer.start`. ParleyServer only knows this protocol.
public protocol HostedService: AnyObject, Sendable {
    /// The domain it serves, such as `conference.example.org`.
    var domain: String { get }
    /// What the server's disco#items calls it.
    var name: String { get }
    /// Called once at start-up, before the server accepts connections: the way back into
    /// the router, and the storage to load the service's state from. A throw stops the start.
    func start(_ outlet: HostedServiceOutlet) async throws
    /// A stanza for the service's domain or a JID at it, `from` stamped with the sender's
    /// full JID. Called on the sender's event loop: long work goes elsewhere.
    func receive(_ stanza: XMLElement, from sender: JID)
    /// Like `receive`, returning what a local sender's acknowledgement must wait for (in a
    /// cluster, the stanza's write to the node that serves its room).
    func receiveDurably(_ stanza: XMLElement, from sender: JID) -> Task<Void, Never>?
    /// A local session ended, for whatever reason (logout, kick, dropped connection,
    /// replacement): what the service kept for that full JID is stale now.
    func sessionEnded(_ session: JID)
    /// The server is stopping and its sessions are still there: the last chance to tell them
    /// something (a room says its occupants are out, status 332).
    func serverStopping()
    /// The server is stopping, its sessions are gone: finish writing what must survive.
    func shutdown() async
}

extension HostedService {
    public func receiveDurably(_ stanza: XMLElement, from sender: JID) -> Task<Void, Never>? {
        receive(stanza, from: sender)
        return nil
    }
    public func serverStopping() {}
    public func shutdown() async {}
}

/// How a hosted service sends: each stanza goes through the router as if a local entity at
/// the service's domain sent it. A stanza whose `from` is not at the service's domain is
/// refused (a service cannot speak for others).
public struct HostedServiceOutlet: Sendable {
    let domain: String
    let router: StanzaRouter
    /// The server's stores (one database for everything), for the service's own tables.
    public let storage: any ServerStorage

    public func send(_ stanza: XMLElement) {
        router.route(stanza, fromService: domain)
    }

    /// The domain of the server's local accounts.
    public var serverDomain: JID { router.domain }
}
