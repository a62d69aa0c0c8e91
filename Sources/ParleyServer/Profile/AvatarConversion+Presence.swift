import ParleyCore

/// XEP-0398 §4: old clients learn of an avatar from the XEP-0153 hash in presence, so the
/// server puts the account's current hash into available presence that lacks one, as
/// Prosody does: an `<x xmlns='vcard-temp:x:update'/>` is added when missing, and its
/// `<photo/>` (empty for "no avatar") when the client left it out; a `<photo/>` the client
/// did send is its own statement and stays as it is.
extension AvatarConversion {
    static let updateNamespace = "vcard-temp:x:update"

    func stamp(_ presence: inout XMLElement, from sender: JID) async {
        guard presence.type == nil, let username = sender.localpart else { return }
        let update = presence.firstChild("x", namespace: Self.updateNamespace)
        if update?.firstChild("photo", namespace: Self.updateNamespace) != nil { return }
        let hash = await photoHash(of: username)
        var x: XMLElement
        if let update {
            x = update
            x.append(XMLElement("photo", namespace: Self.updateNamespace, text: hash))
        } else if hash.isEmpty {
            x = Self.noPhotoUpdate
        } else {
            x = XMLElement("x", namespace: Self.updateNamespace, children: [.element(XMLElement("photo", namespace: Self.updateNamespace, text: hash))])
        }
        presence.removeChildren { $0.name == "x" && $0.namespace == Self.updateNamespace }
        presence.append(x)
    }

    /// `<x><photo/></x>` for an account without an avatar, made once: every session's last
    /// presence keeps it, and this way they share its child list (two arrays of their own
    /// were about 190 bytes of every idle session).
    static let noPhotoUpdate = XMLElement(
        "x", namespace: updateNamespace, children: [.element(XMLElement("photo", namespace: updateNamespace))])

    /// From memory once known; every vCard write, whoever made it, keeps the cache current.
    private func photoHash(of username: String) async -> String {
        if let known = hashes.withLockedValue({ $0[username] }) { return known }
        do {
            let hash = try await profiles.photoHash(of: username) ?? ""
            hashes.withLockedValue { cache in
                if cache[username] == nil { cache[username] = hash }
            }
            return hash
        } catch {
            logger.warning("cannot read the photo hash for presence", metadata: ["user": "\(username)", "error": "\(error)"])
            return ""
        }
    }
}
