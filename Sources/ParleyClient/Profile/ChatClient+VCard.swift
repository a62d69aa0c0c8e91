import ParleyCore

/// XEP-0054 vcard-temp: reading anyone's card, writing our own.
extension ChatClient {
    /// `jid`'s vCard (our own when `jid` is nil or our bare JID); an empty card when they
    /// have none. Refreshes the cached names and photo.
    public func vCard(of jid: JID? = nil) async throws -> VCard {
        let target = jid?.bare == ownBareJID ? nil : jid?.bare
        let answer: XMLElement
        do {
            answer = try await PubSub(xmpp: xmpp).request(type: "get", to: target, XMLElement("vCard", namespace: ProfileNamespace.vcard))
        } catch ProfileError.refused(let error) where error.condition == .itemNotFound {
            return VCard()
        }
        let card = answer.firstChild("vCard", namespace: ProfileNamespace.vcard).map(VCard.init(element:)) ?? VCard()
        let contact = target ?? ownBareJID
        if let photo = card.photo { await keepAvatar(Avatar(hash: photo.hash, type: photo.type, data: photo.data)) }
        let changed = await updateProfile(of: contact) { profile in
            profile.vcardFullName = card.fullName.flatMap(Self.cleanNickname)
            profile.vcardNickname = card.nickname.flatMap(Self.cleanNickname)
            profile.vcardPhotoHash = card.photo?.hash ?? ""
        }
        if changed { await emit(.contactProfileChanged(contact)) }
        return card
    }

    /// Replaces our vCard (the whole card: read it first to change one field).
    public func setVCard(_ card: VCard) async throws {
        if let photo = card.photo, photo.data.count > Self.maximumAvatarBytes {
            throw ProfileError.avatarTooLarge(bytes: photo.data.count, limit: Self.maximumAvatarBytes)
        }
        _ = try await PubSub(xmpp: xmpp).request(type: "set", to: nil, card.element)
        if let photo = card.photo { await keepAvatar(Avatar(hash: photo.hash, type: photo.type, data: photo.data)) }
        let changed = await updateProfile(of: ownBareJID) { profile in
            profile.vcardFullName = card.fullName
            profile.vcardNickname = card.nickname
            profile.vcardPhotoHash = card.photo?.hash ?? ""
        }
        // XEP-0153 §3.2: a new photo is announced in presence.
        if changed { await republishPresence() }
    }
}
