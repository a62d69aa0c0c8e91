import ParleyCore
import ParleyServer

extension MUCNamespace {
    static let vCard = "vcard-temp"
    /// XEP-0153: the hash of a vCard's photo, in presence.
    static let vCardUpdate = "vcard-temp:x:update"
}

/// A room's vCard (its avatar), as XML text, and the XEP-0153 SHA-1 of its photo.
struct MUCRoomAvatar: Sendable, Hashable {
    var vCard: String
    var photoHash: String?
}

/// Room avatars (XEP-0486): a vCard on the room JID; its photo's hash goes out in presence
/// from the room and in the room's disco#info, as Prosody's mod_vcard_muc does.
extension MUCRoom {
    /// The vCard an owner set, checked: a vcard-temp vCard within `maxBytes`, its photo
    /// valid base64. A vCard with nothing in it removes the avatar.
    static func avatar(from vCard: XMLElement, maxBytes: Int) throws(StanzaError) -> MUCRoomAvatar? {
        guard vCard.name == "vCard", vCard.namespace == MUCNamespace.vCard else {
            throw StanzaError(.badRequest, text: "A room's vCard is a <vCard xmlns='vcard-temp'/> element.")
        }
        guard !vCard.elements.isEmpty else { return nil }
        let xml = vCard.xmlString()
        guard xml.utf8.count <= maxBytes else {
            throw StanzaError(
                .notAcceptable, text: "The vCard is \(xml.utf8.count) bytes; rooms here keep vCards of up to \(maxBytes) bytes.")
        }
        do {
            return MUCRoomAvatar(vCard: xml, photoHash: try VCardPhoto.hash(of: vCard))
        } catch .notBase64 {
            throw StanzaError(.badRequest, text: "The vCard's PHOTO/BINVAL is not valid base64.")
        } catch {
            throw StanzaError(.internalServerError, text: "The server cannot hash the vCard's photo.")
        }
    }

    /// The stored vCard as an element; nil when the room has none (or what was stored
    /// cannot be read).
    var vCardElement: XMLElement? {
        guard let avatar else { return nil }
        let wrapped = "<iq xmlns='jabber:client' type='result'>\(avatar.vCard)</iq>"
        guard let iq = MUCStoredStanza.parseAll([wrapped]).first ?? nil else { return nil }
        return iq.firstChild("vCard", namespace: MUCNamespace.vCard)
    }

    /// What a newcomer's session gets after the subject when the room has an avatar: the
    /// room's presence with its photo hash (Prosody sends nothing for a room without one).
    func avatarPresence(to session: JID) -> [XMLElement] {
        guard let hash = avatar?.photoHash else { return [] }
        return [photoPresence(hash, to: session)]
    }

    /// The avatar changed: every occupant's sessions get the room's presence with the new
    /// hash (an empty `<photo/>` for none) and a groupchat notice with status 104.
    func announceAvatar(out: inout [XMLElement]) {
        for session in allSessions {
            out.append(photoPresence(avatar?.photoHash, to: session))
            let status = XMLElement("status", namespace: MUCNamespace.user, ["code": "104"])
            out.append(
                XMLElement(
                    "message", namespace: XMLNamespace.client,
                    ["from": jid.description, "to": session.description, "type": "groupchat", "id": "config-104"],
                    [XMLElement("x", namespace: MUCNamespace.user, [:], [status])]))
        }
    }

    private func photoPresence(_ hash: String?, to session: JID) -> XMLElement {
        let photo = XMLElement("photo", namespace: MUCNamespace.vCardUpdate, text: hash ?? "")
        return XMLElement(
            "presence", namespace: XMLNamespace.client, ["from": jid.description, "to": session.description],
            [XMLElement("x", namespace: MUCNamespace.vCardUpdate, [:], [photo])])
    }

    /// XEP-0486 §4: the photo hash in the room's `muc#roominfo` form (no value: no avatar).
    var avatarHashField: XMLElement {
        var field = XMLElement("field", ["var": "muc#roominfo_avatarhash", "type": "text-multi"])
        if let hash = avatar?.photoHash { field.append(XMLElement("value", text: hash)) }
        return field
    }

    /// The features the archive and the avatar add to the room's disco#info: MAM while the
    /// room archives, and always room stanza-ids and vcard-temp (as Prosody advertises them).
    var archiveAndAvatarFeatures: [String] {
        (configuration.archiving ? [XMLNamespace.archive, MUCService.extendedArchiveFeature] : []) + [XMLNamespace.stanzaID, MUCNamespace.vCard]
    }
}
