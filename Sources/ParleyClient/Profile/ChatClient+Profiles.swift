import ParleyCore

/// Contacts' profiles as they change: PEP notifications (XEP-0163) of avatars and nicknames,
/// which the server sends because our caps say `+notify`, and vCard photo hashes in presence
/// (XEP-0153). Each change is kept in the cache and reported as `.contactProfileChanged`.
extension ChatClient {
    /// At most this many items of one notification are looked at.
    static let maximumEventItems = 20
    /// Longer nicknames are cut (a contact's client could send a novel).
    static let maximumNicknameLength = 256

    /// What we know of `jid`'s profile (our own too).
    public func profile(of jid: JID) -> ContactProfile? {
        profiles[jid.bare]
    }

    /// How to call `jid`: the name we gave them in the roster, else the nickname they chose
    /// (XEP-0172), else their vCard's NICKNAME or FN, else the JID's localpart.
    public func displayName(for jid: JID) -> String {
        let profile = profiles[jid.bare]
        return DisplayName.resolve(
            rosterName: roster[jid.bare]?.name, nickname: profile?.nickname, vcardNickname: profile?.vcardNickname,
            vcardFullName: profile?.vcardFullName, jid: jid)
    }

    /// Publishes our nickname (XEP-0172 §4.1) and sends it with friend requests from now on.
    public func setNickname(_ nickname: String) async throws {
        let trimmed = nickname.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, trimmed.count <= Self.maximumNicknameLength else {
            throw ProfileError.invalidArgument("a nickname has 1 to \(Self.maximumNicknameLength) characters")
        }
        try await PubSub(xmpp: xmpp).publish(
            node: ProfileNamespace.nick, itemID: "current", payload: XMLElement("nick", namespace: ProfileNamespace.nick, text: trimmed),
            options: Self.presenceAccess)
        await updateProfile(of: ownBareJID) { $0.nickname = trimmed }
    }

    /// Changes the cached profile of `jid`; true when something changed.
    @discardableResult
    func updateProfile(of jid: JID, _ change: @escaping @Sendable (inout ContactProfile) -> Void) async -> Bool {
        var profile = profiles[jid.bare] ?? ContactProfile(jid: jid.bare)
        let before = profile
        change(&profile)
        guard profile != before else { return false }
        profiles[jid.bare] = profile
        await persist { _ = try await $0.updateProfile(of: jid, change) }
        return true
    }

    /// A `<message/>` carrying a PEP notification; false for any other message. Only our own
    /// account and roster contacts publish to us: anyone else's are dropped.
    func handlePubSubEvent(_ stanza: XMLElement) async -> Bool {
        guard let event = stanza.firstChild("event", namespace: ProfileNamespace.pubsubEvent) else { return false }
        guard let from = stanza.from.flatMap({ try? JID($0) }), !from.isFull, from == ownBareJID || roster[from] != nil else { return true }
        guard let items = event.firstChild("items", namespace: ProfileNamespace.pubsubEvent) else { return true }
        let published = items.children("item", namespace: ProfileNamespace.pubsubEvent).suffix(Self.maximumEventItems)
        switch items[attribute: "node"] {
        case ProfileNamespace.avatarMetadata:
            guard let last = published.last else { return true }
            await avatarMetadataChanged(from, last.firstChild("metadata", namespace: ProfileNamespace.avatarMetadata))
        case ProfileNamespace.nick:
            guard let last = published.last else {
                // A retraction: no nickname any more.
                if !items.children("retract", namespace: ProfileNamespace.pubsubEvent).isEmpty,
                    await updateProfile(of: from, { $0.nickname = nil })
                {
                    await emit(.contactProfileChanged(from))
                }
                return true
            }
            let nick = last.firstChild("nick", namespace: ProfileNamespace.nick).map { Self.cleanNickname($0.text) } ?? nil
            if await updateProfile(of: from, { $0.nickname = nick }) { await emit(.contactProfileChanged(from)) }
        default:
            break
        }
        return true
    }

    static func cleanNickname(_ text: String) -> String? {
        let trimmed = String(text.trimmingCharacters(in: .whitespacesAndNewlines).prefix(maximumNicknameLength))
        return trimmed.isEmpty ? nil : trimmed
    }

    /// Availability presence of a contact: its XEP-0153 photo hash, when it differs from the
    /// vCard we hold, makes us fetch the vCard (in the background). No `<photo/>` means
    /// "not telling", not "no photo".
    func vcardUpdateInPresence(_ stanza: XMLElement, from contact: JID) {
        guard let photo = stanza.firstChild("x", namespace: ProfileNamespace.vcardUpdate)?.firstChild("photo", namespace: ProfileNamespace.vcardUpdate)
        else { return }
        let hash = photo.text.trimmingCharacters(in: .whitespaces).lowercased()
        guard hash.isEmpty || (hash.count == 40 && hash.allSatisfy(\.isHexDigit)) else { return }
        guard profiles[contact]?.vcardPhotoHash != hash, profileFetches.insert("vcard \(contact) \(hash)").inserted else { return }
        Task {
            do {
                _ = try await self.vCard(of: contact)
            } catch {
                self.logger.info("vCard not fetched", metadata: ["contact": "\(contact)", "error": "\(error)"])
            }
            self.fetchFinished("vcard \(contact) \(hash)")
        }
    }
}

/// The display-name rule, on its own so that every screen applies the same one.
public enum DisplayName {
    public static func resolve(rosterName: String?, nickname: String?, vcardNickname: String?, vcardFullName: String?, jid: JID) -> String {
        for candidate in [rosterName, nickname, vcardNickname, vcardFullName] {
            if let candidate, let clean = printable(candidate) { return clean }
        }
        return jid.localpart ?? jid.domainpart
    }

    /// Names come from other people's clients: control characters (terminal escapes, line
    /// breaks) go, and an empty result does not count.
    static func printable(_ text: String) -> String? {
        let kept = String(String.UnicodeScalarView(text.unicodeScalars.filter { !$0.properties.generalCategory.isControl }))
            .trimmingCharacters(in: .whitespaces)
        return kept.isEmpty ? nil : kept
    }
}

extension Unicode.GeneralCategory {
    var isControl: Bool {
        switch self {
        case .control, .format, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }
}
