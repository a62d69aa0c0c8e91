import ParleyCore

/// Moderation (XEP-0045 §8.2 kick, §8.3–8.5 voice, §9.1 ban, §9.3–10.7 affiliations): a
/// `muc#admin` set from a moderator (roles) or an admin or owner (affiliations).
extension MUCRoom {
    /// What a moderation request changed: the sessions it removed from the room, and
    /// whether affiliations changed (a persistent room stores them).
    struct AdminOutcome {
        var removedSessions: [JID] = []
        var affiliationsChanged = false
    }

    mutating func admin(_ query: XMLElement, from session: JID, out: inout [XMLElement]) throws(StanzaError) -> AdminOutcome {
        let items = query.children("item", namespace: MUCNamespace.admin)
        guard !items.isEmpty, items.count <= 50 else {
            throw StanzaError(.badRequest, text: "A muc#admin request carries 1 to 50 <item/> elements.")
        }
        var outcome = AdminOutcome()
        let actorNick = nick(of: session)
        let actorAffiliation = affiliation(of: session)
        for item in items {
            let reason = item.firstChild("reason", namespace: MUCNamespace.admin)?.text
            if let roleName = item[attribute: "role"] {
                guard let role = MUCRole(rawValue: roleName) else {
                    throw StanzaError(.badRequest, text: "'\(roleName)' is not a role.")
                }
                guard let actorNick, occupant(actorNick)?.role == .moderator else {
                    throw StanzaError(.forbidden, text: "Only moderators change roles.")
                }
                guard let nick = item[attribute: "nick"], let target = occupant(nick) else {
                    throw StanzaError(.itemNotFound, text: "No one in this room has the nickname '\(item[attribute: "nick"] ?? "")'.")
                }
                // §8.2: a moderator cannot kick or silence an admin or owner.
                let targetAffiliation = affiliation(of: target.account)
                if (targetAffiliation == .owner || targetAffiliation == .admin), role != .moderator {
                    throw StanzaError(.notAllowed, text: "The room's admins and owners keep their role.")
                }
                // §9.6–9.7: moderator is given and taken (a kick takes it too) by admins and
                // owners only, as Prosody rules.
                if role == .moderator || target.role == .moderator, actorAffiliation != .owner, actorAffiliation != .admin {
                    throw StanzaError(.forbidden, text: "Only admins and owners grant or revoke moderator.")
                }
                if role == .none {
                    outcome.removedSessions += remove(target, status: .kicked, actor: actorNick, reason: reason, out: &out)
                } else {
                    update(nick) { $0.role = role }
                    announce(nick, out: &out)
                    revealRealJIDs(to: nick, after: target.role, out: &out)
                }
            } else if let affiliationName = item[attribute: "affiliation"] {
                guard let affiliation = MUCAffiliation(rawValue: affiliationName) else {
                    throw StanzaError(.badRequest, text: "'\(affiliationName)' is not an affiliation.")
                }
                guard actorAffiliation == .owner || actorAffiliation == .admin else {
                    throw StanzaError(.forbidden, text: "Only admins and owners change affiliations.")
                }
                guard let value = item[attribute: "jid"], let account = try? JID(value) else {
                    throw StanzaError(.jidMalformed, text: "An affiliation change names a 'jid'.")
                }
                let current = self.affiliation(of: account)
                // §9.1: an admin or owner never bans itself.
                if affiliation == .outcast, account.bare == session.bare {
                    throw StanzaError(.conflict, text: "You cannot ban yourself.")
                }
                // §10.3–10.8: owners alone modify the owner and admin lists; an admin who
                // tries is forbidden. Demoting or banning someone above is not allowed (§9.1).
                if actorAffiliation != .owner, affiliation == .owner || affiliation == .admin {
                    throw StanzaError(.forbidden, text: "Only owners make owners and admins of this room.")
                }
                if actorAffiliation != .owner, current == .owner || current == .admin {
                    throw StanzaError(.notAllowed, text: "Only owners change who owns or administers this room.")
                }
                if current == .owner, affiliation != .owner, affiliations.values.filter({ $0 == .owner }).count == 1 {
                    throw StanzaError(.conflict, text: "A room keeps at least one owner.")
                }
                outcome.affiliationsChanged = true
                outcome.removedSessions += setAffiliation(affiliation, of: account, actor: actorNick, reason: reason, out: &out)
            } else {
                throw StanzaError(.badRequest, text: "An <item/> changes a 'role' or an 'affiliation'.")
            }
        }
        return outcome
    }

    /// The occupant's changed presence, to everyone (110 to its own sessions).
    private func announce(_ nick: String, out: inout [XMLElement]) {
        guard let occupant = occupant(nick) else { return }
        for session in allSessions {
            out.append(presence(of: occupant, to: session, statuses: occupant.sessions.contains(session) ? [.selfPresence] : []))
        }
    }

    /// Takes the occupant out with 307 (kicked) or 301 (banned), the actor and the reason,
    /// told to everyone including the occupant's own sessions (with 110).
    private mutating func remove(
        _ occupant: MUCOccupant, status: MUCStatus, actor: String?, reason: String?, out: inout [XMLElement]
    ) -> [JID] {
        var details: [XMLElement] = []
        if let actor { details.append(XMLElement("actor", namespace: MUCNamespace.user, ["nick": actor])) }
        if let reason { details.append(XMLElement("reason", namespace: MUCNamespace.user, text: reason)) }
        for session in allSessions {
            let own = occupant.sessions.contains(session)
            out.append(
                presence(
                    of: occupant, to: session, type: "unavailable", statuses: own ? [status, .selfPresence] : [status],
                    role: MUCRole.none, itemChildren: details))
        }
        for session in occupant.sessions { _ = removeSession(session) }
        return occupant.sessions.array
    }
}

extension MUCRoom {
    /// §9.5, §10.5, §8.5: the list of one affiliation (for admins and owners) or one role (for
    /// moderators).
    func adminList(_ query: XMLElement, from session: JID) throws(StanzaError) -> XMLElement {
        let items = query.children("item", namespace: MUCNamespace.admin)
        guard items.count == 1, let item = items.first else {
            throw StanzaError(.badRequest, text: "A muc#admin list request carries one <item/> naming an affiliation or a role.")
        }
        var list = XMLElement("query", namespace: MUCNamespace.admin)
        if let name = item[attribute: "affiliation"] {
            guard let wanted = MUCAffiliation(rawValue: name), wanted != .none else {
                throw StanzaError(.badRequest, text: "'\(name)' is not an affiliation with a list.")
            }
            let actor = affiliation(of: session)
            guard actor == .owner || actor == .admin else {
                throw StanzaError(.forbidden, text: "Only admins and owners see the affiliation lists.")
            }
            for (account, affiliation) in affiliations.sorted(by: { $0.key < $1.key }) where affiliation == wanted {
                list.append(XMLElement("item", namespace: MUCNamespace.admin, ["affiliation": affiliation.rawValue, "jid": account.description]))
            }
        } else if let name = item[attribute: "role"] {
            guard let wanted = MUCRole(rawValue: name), wanted != .none else {
                throw StanzaError(.badRequest, text: "'\(name)' is not a role with a list.")
            }
            guard let nick = nick(of: session), occupant(nick)?.role == .moderator else {
                throw StanzaError(.forbidden, text: "Only moderators see the role lists.")
            }
            for occupant in occupants.values.sorted(by: { $0.nick < $1.nick }) where occupant.role == wanted {
                list.append(
                    XMLElement(
                        "item", namespace: MUCNamespace.admin,
                        [
                            "affiliation": affiliation(of: occupant.account).rawValue, "role": occupant.role.rawValue,
                            "nick": occupant.nick, "jid": occupant.realJID.description,
                        ]))
            }
        } else {
            throw StanzaError(.badRequest, text: "An <item/> names an 'affiliation' or a 'role'.")
        }
        return list
    }
}
