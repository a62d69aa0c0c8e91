import ParleyCore

/// A hosted service whose entities live on one node of a cluster at a time (a multi-user
/// chat room): every node hands a stanza for such an entity to its `ServicePlacement`, which
/// serves it here when this node holds the entity's lease and forwards it to the node that
/// does otherwise. On a single node there is no placement and the service serves everything.
public protocol PlacedService: HostedService {
    /// The entity a stanza to `address` is for (a room's localpart); nil for what every node
    /// answers alike (the service's own domain: disco, the room list).
    func placementKey(of address: JID) -> String?
    /// Joins the service to its cluster's placement (once, at start-up).
    func attach(_ placement: any ServicePlacement)
    /// Serves a stanza here; `done` runs once what it caused was handed to the router (so a
    /// forwarded stanza's inbox row is deleted only after its effects are queued behind it).
    func serve(_ stanza: XMLElement, from sender: JID, done: @escaping @Sendable () -> Void)
    /// This node now holds `key`'s lease: load it from storage, with the members the previous
    /// holder recorded (`ServicePlacement.record`).
    func adopt(_ key: String, members: [PlacedMember]) async
    /// This node no longer holds `key` (its lease was taken over): forget it without a word.
    func release(_ key: String)
    /// Sessions that ended because their node died (they said no goodbye): as
    /// `sessionEnded`, told as a removal for a technical reason where the service has one.
    func sessionsLost(_ sessions: [JID])
}

/// The cluster's side of `PlacedService`.
public protocol ServicePlacement: AnyObject, Sendable {
    /// Serves the stanza here or forwards it to the entity's node, claiming the entity first
    /// if no node holds it. The task completes once the stanza is safe: served, or committed
    /// to the owning node's inbox (a sender's acknowledgement waits for it).
    func route(_ stanza: XMLElement, from sender: JID, service: String, key: String) -> Task<Void, Never>?
    /// What the service keeps of a member (a room's occupant session) changed: `data` nil
    /// when it left. Stored with the stanzas this node sends after it, in order, so a node
    /// that takes the entity over knows who was in it.
    func record(service: String, key: String, member: JID, data: String?)
}

/// A member as the previous holder of an entity recorded it.
public struct PlacedMember: Sendable {
    public let jid: JID
    public let data: String
    /// Its session is still bound somewhere in the cluster; false when it ended, or its node
    /// died, while no node held the entity.
    public let alive: Bool

    public init(jid: JID, data: String, alive: Bool) {
        self.jid = jid
        self.data = data
        self.alive = alive
    }
}
