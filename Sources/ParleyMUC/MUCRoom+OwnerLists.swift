import ParleyCore

/// The owner and admin lists in the configuration form (`muc#roomconfig_roomowners`,
/// `muc#roomconfig_roomadmins`, XEP-0045 §15.5.3): an owner sees who owns and administers
/// the room and changes both with the rest of the configuration. Each submitted field is the
/// whole list, not a change to it (§10.5); a client that returns the form as it got it
/// changes nothing.
extension MUCRoom {
    static let ownersField = "muc#roomconfig_roomowners"
    static let adminsField = "muc#roomconfig_roomadmins"

    /// The configuration form with both lists as they stand.
    func configurationForm(serviceMaxOccupants: Int) -> XMLElement {
        var form = configuration.form(serviceMaxOccupants: serviceMaxOccupants)
        for (field, affiliation, label) in [(Self.ownersField, MUCAffiliation.owner, "Owners"), (Self.adminsField, .admin, "Admins")] {
            let accounts = affiliations.filter { $0.value == affiliation }.keys.sorted()
            form.append(
                XMLElement(
                    "field", ["var": field, "type": "jid-multi", "label": label],
                    accounts.map { XMLElement("value", text: $0.description) }))
        }
        return form
    }

    /// The affiliation changes a submitted form asks for, checked before anything changes:
    /// a JID that does not parse is `jid-malformed`; a room left without owners is `conflict`.
    func ownerListChanges(in form: XMLElement) throws(StanzaError) -> [(account: JID, affiliation: MUCAffiliation)] {
        func list(_ name: String) throws(StanzaError) -> Set<JID>? {
            guard let field = form.children("field", namespace: XMLNamespace.dataForms).first(where: { $0[attribute: "var"] == name })
            else { return nil }
            var accounts = Set<JID>()
            for value in field.children("value", namespace: XMLNamespace.dataForms) {
                let text = value.text ?? ""
                if text.isEmpty { continue }
                guard let account = try? JID(text) else { throw StanzaError(.jidMalformed, text: "'\(text)' in \(name) is not a JID.") }
                accounts.insert(account.bare)
            }
            return accounts
        }
        let currentOwners = Set(affiliations.filter { $0.value == .owner }.keys)
        let currentAdmins = Set(affiliations.filter { $0.value == .admin }.keys)
        // A list the form leaves out stays as it is.
        let owners = try list(Self.ownersField) ?? currentOwners
        let admins = try list(Self.adminsField) ?? currentAdmins
        guard !owners.isEmpty else { throw StanzaError(.conflict, text: "A room keeps at least one owner.") }
        var wanted: [JID: MUCAffiliation] = [:]
        // Off a list and on neither: no affiliation; on both: owner.
        for account in currentOwners.union(currentAdmins).subtracting(owners).subtracting(admins) { wanted[account] = MUCAffiliation.none }
        for account in admins { wanted[account] = .admin }
        for account in owners { wanted[account] = .owner }
        return wanted.filter { affiliation(of: $0.key) != $0.value }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }
}
