import ParleyCore

/// Who sees real JIDs follows the role (§7.2.3–7.2.4): in a semi-anonymous room a new
/// moderator may now see who is behind each nickname, but what it received as a participant
/// did not say; the presence it gets from now on does. As Prosody does when an affiliation
/// change makes or unmakes a moderator, its sessions get every other occupant's presence
/// again, with the `jid`. A demoted moderator just gets no `jid` in later presence (what it
/// saw cannot be taken back), so nothing is resent to it.
extension MUCRoom {
    /// After `nick`'s role changed from `previous` (its new presence already sent).
    func revealRealJIDs(to nick: String, after previous: MUCRole, out: inout [XMLElement]) {
        guard configuration.whois == .moderators, previous != .moderator, let occupant = occupant(nick),
            occupant.role == .moderator
        else { return }
        for session in occupant.sessions {
            sendOccupants(to: session, withRealJID: true, except: nick, out: &out)
        }
    }
}
