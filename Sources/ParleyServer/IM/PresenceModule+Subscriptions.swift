import Foundation
import ParleyCore
import ParleyStorage

/// Presence subscriptions, the "friend requests" of RFC 6121 §3: each stanza is applied to
/// the sender's side (outbound, Appendix A.2) and then, both accounts being local, to the
/// recipient's side (inbound, A.3), with a roster push for every item that changed and
/// presence passed on or withdrawn as the subscription now allows.
extension PresenceModule {
    func subscription(_ request: SubscriptionRequest, _ stanza: XMLElement, from sender: SessionHandle, to contact: JID) async throws {
        let user = sender.jid.bare
        guard contact != user, let username = user.localpart else { return }
        let outcome = try await transition(of: username, toward: contact) { SubscriptionStateMachine.outbound(request, $0) }
        if let change = outcome.change { pusher.push(change.element, version: change.version, to: user) }
        let before = outcome.before
        if request == .unsubscribed, before.hasFrom, !outcome.result.state.hasFrom {
            withdrawPresence(of: user, from: contact)
        }
        guard outcome.result.forward else { return }
        // Subscription stanzas travel between bare JIDs (§3.1.2).
        var forwarded = XMLElement("presence", namespace: XMLNamespace.client, ["from": user.description, "to": contact.description, "type": request.rawValue])
        for child in stanza.elements { forwarded.append(child) }
        do {
            // The contact's roster transaction tells whether the account exists: no separate
            // look-up for each of the four stanzas of a handshake.
            try await receive(request, from: user, at: contact, stanza: forwarded)
        } catch StorageError.accountNotFound(let name) where name == contact.localpart {
            // RFC 6121 §8.5.1: no such account here, so nothing happens on its side and
            // nothing comes back (as Prosody): the request stays pending in the user's roster,
            // as one to an account that never answers would.
            return
        }
        if request == .subscribed {
            events.publish(.presenceSubscriptionApproved(owner: user, subscriber: contact))
            // §3.1.5: the new subscriber gets the user's current presence.
            for session in sessions.sessions(of: user) where session.isAvailable {
                if let last = session.withPresence({ $0.lastPresence }) { send(last, from: session.jid, toAccount: contact) }
            }
        }
    }

    /// The inbound half: `from` sent `request` to the local account `owner`.
    func receive(_ request: SubscriptionRequest, from: JID, at owner: JID, stanza: XMLElement?) async throws {
        guard let ownerName = owner.localpart else { return }
        let message = stanza ?? XMLElement(
            "presence", namespace: XMLNamespace.client, ["from": from.description, "to": owner.description, "type": request.rawValue])
        if policy.verdict(from: from, to: owner, stanza: message) != .deliver { return }
        let outcome = try await transition(of: ownerName, toward: from, pendingStanza: request == .subscribe ? message : nil) {
            SubscriptionStateMachine.inbound(request, $0)
        }
        // The stanza before the roster push, as Prosody sends them: a client that shows
        // "bob accepted your request" from the presence finds the item already pushed in
        // the right state otherwise, and then has nothing to attach the news to.
        if outcome.result.forward {
            for session in sessions.sessions(of: owner) where session.isAvailable { session.deliver(message) }
        }
        if let change = outcome.change { pusher.push(change.element, version: change.version, to: owner) }
        if request == .unsubscribe, outcome.before.hasFrom, !outcome.result.state.hasFrom {
            withdrawPresence(of: owner, from: from)
        }
        if outcome.result.autoReply == .subscribed {
            // Answered on the owner's behalf (already subscribed, or pre-approved): the
            // requester learns it as if the owner had approved, and gets the presence.
            try await receive(.subscribed, from: owner, at: from, stanza: nil)
            events.publish(.presenceSubscriptionApproved(owner: owner, subscriber: from))
            for session in sessions.sessions(of: owner) where session.isAvailable {
                if let last = session.withPresence({ $0.lastPresence }) { send(last, from: session.jid, toAccount: from) }
            }
        }
    }

    /// Roster removal (§2.5): the subscriptions in both directions end, the contact is told,
    /// and presence stops flowing both ways.
    func removeContact(_ contact: JID, of user: JID) async throws -> Bool {
        guard let username = user.localpart else { return false }
        let contactName = contact.description
        let removed = try await rosters.modifyRoster(of: username) { transaction -> (SubscriptionState, Int64)? in
            let item = try transaction.item(contactName)
            let pending = try transaction.pending(contactName)
            guard item != nil || pending != nil else { return nil }
            let state = SubscriptionState(
                item?.subscription ?? .none, pendingOut: item?.askSubscribe ?? false, pendingIn: pending != nil,
                preApproved: item?.approved ?? false)
            if pending != nil { try transaction.removePending(contactName) }
            if item != nil { try transaction.removeItem(contactName) }
            return (state, transaction.version + 1)
        }
        guard let (state, version) = removed else { return false }
        pusher.push(RosterXML.removal(of: contactName), version: version, to: user)
        if state.hasFrom { withdrawPresence(of: user, from: contact) }
        guard let contactName = contact.localpart, try await accounts.account(username: contactName) != nil else { return true }
        if state.hasTo || state.pendingOut { try await receive(.unsubscribe, from: user, at: contact, stanza: nil) }
        // The contact's unavailable presence to the user (§3.3.3) is sent by the contact's
        // side as it handles the unsubscribe above; sending it here too doubled it.
        if state.hasFrom || state.pendingIn { try await receive(.unsubscribed, from: user, at: contact, stanza: nil) }
        return true
    }

    /// Unavailable presence from each available resource of `owner` to `recipient`, whose
    /// subscription to it just ended (§3.2.2, §3.3.3).
    func withdrawPresence(of owner: JID, from recipient: JID) {
        for session in sessions.sessions(of: owner) where session.isAvailable {
            let unavailable = XMLElement(
                "presence", namespace: XMLNamespace.client, ["from": session.jid.description, "type": "unavailable"])
            send(unavailable, from: session.jid, toAccount: recipient)
        }
    }

    struct Transition: Sendable {
        var before: SubscriptionState
        var result: SubscriptionOutcome
        /// The roster item as pushed, when it changed.
        var change: (element: XMLElement, version: Int64)?
    }

    /// Applies one table of Appendix A to `owner`'s state toward `contact` in one roster
    /// transaction. An unanswered request is stored (with its stanza, for re-delivery at
    /// every login); a roster item exists once there is anything to show in it.
    private func transition(
        of owner: String, toward contact: JID, pendingStanza: XMLElement? = nil,
        _ apply: @escaping @Sendable (SubscriptionState) -> SubscriptionOutcome
    ) async throws -> Transition {
        let contactName = contact.description
        let storedRequest = pendingStanza.map(StoredStanza.serialize)
        return try await rosters.modifyRoster(of: owner) { transaction in
            let item = try transaction.item(contactName)
            let pending = try transaction.pending(contactName)
            let before = SubscriptionState(
                item?.subscription ?? .none, pendingOut: item?.askSubscribe ?? false, pendingIn: pending != nil,
                preApproved: item?.approved ?? false)
            let outcome = apply(before)
            let after = outcome.state
            if after.pendingIn, let storedRequest {
                try transaction.setPending(PendingSubscription(contact: contactName, stanza: storedRequest, receivedAt: Date()))
            } else if !after.pendingIn, pending != nil {
                try transaction.removePending(contactName)
            }
            var change: (XMLElement, Int64)? = nil
            let itemChanged = after.subscription != before.subscription || after.pendingOut != before.pendingOut
                || after.preApproved != before.preApproved
            let needsItem = item != nil || after.subscription != .none || after.pendingOut || after.preApproved
            if itemChanged, needsItem {
                var updated = item ?? RosterItem(contact: contactName)
                updated.subscription = after.subscription
                updated.askSubscribe = after.pendingOut
                updated.approved = after.preApproved
                try transaction.setItem(updated)
                let stored = try transaction.item(contactName) ?? updated
                change = (RosterXML.element(for: stored), stored.version)
            }
            return Transition(before: before, result: outcome, change: change)
        }
    }
}
