import ParleyCore

/// XEP-0084 User Avatar, both ways: our own published in PEP (data first, then metadata, as
/// §4 orders, so no one is told of bytes they cannot fetch yet), and contacts' fetched when
/// their metadata names a picture we do not have, checked against its SHA-1 id.
extension ChatClient {
    /// Avatars bigger than this are refused before publishing: base64 makes them a third
    /// larger, and servers limit stanzas (Prosody and parleyd to 256 KiB).
    public static let maximumAvatarBytes = 128 * 1024
    /// A contact's avatar announced bigger than this is not fetched.
    static let maximumFetchedAvatarBytes = 1024 * 1024

    /// XEP-0060 publish-options for profile nodes: contacts who see our presence may read them.
    static let presenceAccess = ["pubsub#access_model": "presence"]

    /// Publishes `data` (PNG, JPEG, GIF or WebP) as our avatar; returns its id.
    @discardableResult
    public func setAvatar(_ data: [UInt8]) async throws -> String {
        guard !data.isEmpty, let info = ImageInfo(data) else { throw ProfileError.unsupportedImage }
        guard data.count <= Self.maximumAvatarBytes else {
            throw ProfileError.avatarTooLarge(bytes: data.count, limit: Self.maximumAvatarBytes)
        }
        let id = sha1Hex(data)
        let pubsub = PubSub(xmpp: xmpp)
        try await pubsub.publish(
            node: ProfileNamespace.avatarData, itemID: id,
            payload: XMLElement("data", namespace: ProfileNamespace.avatarData, text: Base64.encode(data)), options: Self.presenceAccess)
        var attributes = [XMLAttribute("bytes", String(data.count)), XMLAttribute("id", id), XMLAttribute("type", info.type)]
        if let width = info.width, let height = info.height {
            attributes += [XMLAttribute("width", String(width)), XMLAttribute("height", String(height))]
        }
        var metadata = XMLElement("metadata", namespace: ProfileNamespace.avatarMetadata)
        metadata.append(XMLElement("info", namespace: ProfileNamespace.avatarMetadata, attributes: attributes))
        try await pubsub.publish(node: ProfileNamespace.avatarMetadata, itemID: id, payload: metadata, options: Self.presenceAccess)
        await keepAvatar(Avatar(hash: id, type: info.type, data: data))
        // Our vCard photo, if any, is no longer the picture: presence stops naming its hash.
        let hadPhotoHash = profiles[ownBareJID]?.vcardPhotoHash != nil
        await updateProfile(of: ownBareJID) { profile in
            profile.avatarHash = id
            profile.vcardPhotoHash = nil
        }
        if hadPhotoHash { await republishPresence() }
        return id
    }

    /// Stops showing an avatar: empty metadata (XEP-0084 §4.5).
    public func removeAvatar() async throws {
        try await PubSub(xmpp: xmpp).publish(
            node: ProfileNamespace.avatarMetadata, itemID: nil, payload: XMLElement("metadata", namespace: ProfileNamespace.avatarMetadata),
            options: Self.presenceAccess)
        await updateProfile(of: ownBareJID) { $0.avatarHash = "" }
    }

    /// The picture we have for `jid` (PEP avatar, else vCard photo), from the cache.
    public func avatar(of jid: JID) async -> Avatar? {
        guard let hash = profiles[jid.bare]?.currentAvatarHash else { return nil }
        return await storedAvatar(hash)
    }

    /// Fetches `jid`'s current avatar from their PEP service, whatever the cache holds.
    public func fetchAvatar(of jid: JID) async throws -> Avatar? {
        let items = try await PubSub(xmpp: xmpp).items(node: ProfileNamespace.avatarMetadata, at: jid.bare)
        guard let metadata = items.last?.firstChild("metadata", namespace: ProfileNamespace.avatarMetadata),
            let info = Self.preferredInfo(metadata)
        else { return nil }
        return try await fetchAvatarData(of: jid.bare, info: info)
    }

    func storedAvatar(_ hash: String) async -> Avatar? {
        if let cache { return try? await cache.avatar(hash: hash) }
        return memoryAvatars[hash]
    }

    func keepAvatar(_ avatar: Avatar) async {
        if cache == nil {
            memoryAvatars[avatar.hash] = avatar
        } else {
            await persist { try await $0.storeAvatar(avatar) }
        }
    }

    /// A metadata notification (or item) from `contact`: an empty one means "no avatar";
    /// a new id is fetched in the background (a stanza handler must not wait for the server).
    func avatarMetadataChanged(_ contact: JID, _ metadata: XMLElement?) async {
        guard let metadata, let info = Self.preferredInfo(metadata) else {
            if await updateProfile(of: contact, { $0.avatarHash = "" }) { await emit(.contactProfileChanged(contact)) }
            return
        }
        let id = (info[attribute: "id"] ?? "").lowercased()
        if profiles[contact]?.avatarHash == id, await storedAvatar(id) != nil { return }
        if await storedAvatar(id) != nil {
            if await updateProfile(of: contact, { $0.avatarHash = id }) { await emit(.contactProfileChanged(contact)) }
            return
        }
        guard profileFetches.insert("avatar \(contact) \(id)").inserted else { return }
        Task {
            do {
                _ = try await self.fetchAvatarData(of: contact, info: info)
            } catch {
                self.logger.info("avatar not fetched", metadata: ["contact": "\(contact)", "error": "\(error)"])
            }
            self.fetchFinished("avatar \(contact) \(id)")
        }
    }

    func fetchFinished(_ key: String) {
        profileFetches.remove(key)
    }

    /// Fetches the data item `info` names, checks its size and hash, keeps it and records it
    /// as `contact`'s avatar.
    private func fetchAvatarData(of contact: JID, info: XMLElement) async throws -> Avatar {
        // The item is asked for by its id as published; hashes compare in lower case.
        guard let published = info[attribute: "id"], published.count == 40 else {
            throw ProfileError.malformedAnswer("avatar metadata without a SHA-1 id")
        }
        if let declared = info[attribute: "bytes"].flatMap(Int.init), declared > Self.maximumFetchedAvatarBytes {
            throw ProfileError.avatarTooLarge(bytes: declared, limit: Self.maximumFetchedAvatarBytes)
        }
        let id = published.lowercased()
        let items = try await PubSub(xmpp: xmpp).items(node: ProfileNamespace.avatarData, at: contact, itemID: published)
        guard let text = items.first(where: { $0[attribute: "id"]?.lowercased() == id })?.firstChild("data", namespace: ProfileNamespace.avatarData)?.text
        else { throw ProfileError.malformedAnswer("no avatar data item \(id)") }
        guard let data = try? Base64.decode(text.filter { !$0.isWhitespace }) else {
            throw ProfileError.malformedAnswer("avatar data is not base64")
        }
        guard data.count <= Self.maximumFetchedAvatarBytes else {
            throw ProfileError.avatarTooLarge(bytes: data.count, limit: Self.maximumFetchedAvatarBytes)
        }
        let actual = sha1Hex(data)
        guard actual == id else { throw ProfileError.hashMismatch(expected: id, actual: actual) }
        let declaredType = info[attribute: "type"].flatMap(DisplayName.printable).map { String($0.prefix(100)) }
        let avatar = Avatar(hash: id, type: declaredType ?? ImageInfo(data)?.type ?? "application/octet-stream", data: data)
        await keepAvatar(avatar)
        if await updateProfile(of: contact, { $0.avatarHash = id }) { await emit(.contactProfileChanged(contact)) }
        return avatar
    }

    /// Of several `<info/>`, the one stored in the data node (no `url`), PNG first (§4.2.1
    /// requires a PNG to be among them).
    static func preferredInfo(_ metadata: XMLElement) -> XMLElement? {
        let inline = metadata.children("info", namespace: ProfileNamespace.avatarMetadata).filter { $0[attribute: "url"] == nil && $0[attribute: "id"] != nil }
        return inline.first { $0[attribute: "type"] == "image/png" } ?? inline.first
    }
}
