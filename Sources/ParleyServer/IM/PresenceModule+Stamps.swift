import ParleyCore

/// Amends a user's outgoing available presence (broadcast or directed) before the server
/// keeps it as the resource's current presence and sends it: XEP-0398 §4's avatar hash.
public typealias AvailablePresenceStamp = @Sendable (_ presence: inout XMLElement, _ sender: JID) async -> Void

extension PresenceModule {
    /// Adds a stamp; stamps run in the order added, in the user's presence queue.
    public func addAvailablePresenceStamp(_ stamp: @escaping AvailablePresenceStamp) {
        availablePresenceStamps.withLockedValue { $0.append(stamp) }
    }

    func stampAvailablePresence(_ presence: inout XMLElement, from sender: SessionHandle) async {
        for stamp in availablePresenceStamps.withLockedValue({ $0 }) { await stamp(&presence, sender.jid) }
    }
}
