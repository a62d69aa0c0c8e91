import ParleyCore

/// Bookmarks: XEP-0402 in PEP when our server promises to keep XEP-0048 clients in step
/// (`urn:xmpp:bookmarks:1#compat` on our account, §5.3), else XEP-0048 in private XML storage
/// (XEP-0049), which every older client reads.
extension ChatClient {
    /// XEP-0402 §4: the node keeps every item, only we may read it, and nothing is pushed
    /// at login.
    static let bookmarkNodeOptions = [
        "pubsub#persist_items": "true", "pubsub#max_items": "max", "pubsub#send_last_published_item": "never",
        "pubsub#access_model": "whitelist",
    ]

    public func bookmarks() async throws -> [Bookmark] {
        if try await usesNativeBookmarks() {
            let items = try await PubSub(xmpp: xmpp).items(node: ProfileNamespace.bookmarks, at: nil)
            return items.compactMap(Bookmark.init(item:)).sorted { $0.jid < $1.jid }
        }
        let (bookmarks, _) = try await legacyStorage()
        return bookmarks.sorted { $0.jid < $1.jid }
    }

    /// Adds a bookmark, or replaces the one with the same room JID.
    public func addBookmark(_ bookmark: Bookmark) async throws {
        guard bookmark.jid.localpart != nil, !bookmark.jid.isFull else {
            throw ProfileError.invalidArgument("a bookmark names a room as room@service, not \(bookmark.jid)")
        }
        if try await usesNativeBookmarks() {
            try await PubSub(xmpp: xmpp).publish(
                node: ProfileNamespace.bookmarks, itemID: bookmark.jid.description, payload: bookmark.conference,
                options: Self.bookmarkNodeOptions)
            return
        }
        var (bookmarks, storage) = try await legacyStorage()
        bookmarks.removeAll { $0.jid == bookmark.jid }
        bookmarks.append(bookmark)
        try await storeLegacy(bookmarks, keeping: storage)
    }

    /// Removes the bookmark of `room`; true when there was one.
    @discardableResult
    public func removeBookmark(_ room: JID) async throws -> Bool {
        if try await usesNativeBookmarks() {
            guard try await bookmarks().contains(where: { $0.jid == room }) else { return false }
            try await PubSub(xmpp: xmpp).retract(node: ProfileNamespace.bookmarks, itemID: room.description)
            return true
        }
        var (bookmarks, storage) = try await legacyStorage()
        let before = bookmarks.count
        bookmarks.removeAll { $0.jid == room }
        guard bookmarks.count < before else { return false }
        try await storeLegacy(bookmarks, keeping: storage)
        return true
    }

    /// Asks our account (disco#info to the bare JID, XEP-0402 §5.3) once per session.
    func usesNativeBookmarks() async throws -> Bool {
        if let known = nativeBookmarks { return known }
        let answer = try await PubSub(xmpp: xmpp).request(type: "get", to: ownBareJID, XMLElement("query", namespace: XMLNamespace.discoInfo))
        let features = answer.firstChild("query", namespace: XMLNamespace.discoInfo)?.children("feature", namespace: XMLNamespace.discoInfo)
            .compactMap { $0[attribute: "var"] } ?? []
        let native = features.contains(ProfileNamespace.bookmarksCompat)
        nativeBookmarks = native
        return native
    }

    /// The XEP-0048 bookmarks and the whole `<storage/>` they came in (its `<url/>` and
    /// unknown children are written back as they were).
    private func legacyStorage() async throws -> ([Bookmark], XMLElement) {
        let query = XMLElement("query", namespace: ProfileNamespace.privateStorage, [:], [XMLElement("storage", namespace: ProfileNamespace.legacyBookmarks)])
        let answer = try await PubSub(xmpp: xmpp).request(type: "get", to: nil, query)
        let storage = answer.firstChild("query", namespace: ProfileNamespace.privateStorage)?.firstChild("storage", namespace: ProfileNamespace.legacyBookmarks)
            ?? XMLElement("storage", namespace: ProfileNamespace.legacyBookmarks)
        return (storage.children("conference", namespace: ProfileNamespace.legacyBookmarks).compactMap(Bookmark.init(legacy:)), storage)
    }

    private func storeLegacy(_ bookmarks: [Bookmark], keeping old: XMLElement) async throws {
        var storage = old
        storage.removeChildren { $0.name == "conference" && $0.namespace == ProfileNamespace.legacyBookmarks }
        for bookmark in bookmarks.sorted(by: { $0.jid < $1.jid }) { storage.append(bookmark.legacyConference) }
        _ = try await PubSub(xmpp: xmpp).request(type: "set", to: nil, XMLElement("query", namespace: ProfileNamespace.privateStorage, [:], [storage]))
    }
}
