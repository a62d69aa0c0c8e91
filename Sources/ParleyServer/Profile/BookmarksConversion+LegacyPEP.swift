import ParleyCore

/// XEP-0048 over PEP (§3.2, the XEP-0223 way): older clients keep the whole list as one
/// item of the `storage:bookmarks` node. A publish there counts as a write of the private
/// copy (and so reaches `urn:xmpp:bookmarks:1`); once an account has that node, every other
/// change of the list is published to it too, so those clients stay in step. Comparisons
/// are of bookmarks, as everywhere in the mirror, so its own publishes end in a no-op.
extension BookmarksConversion {
    func copyLegacyPEPToPrivate(_ username: String) async {
        do {
            guard let item = try await pep.store.pepItems(node: Self.legacyNamespace, of: username, ids: nil, newest: 1).last,
                let storage = ProfileXML.parse(item.payload), storage.name == "storage", storage.namespace == Self.legacyNamespace
            else { return }
            let stored = try await profiles.privateXML(of: username, [("storage", Self.legacyNamespace)]).first ?? nil
            if stored.map(Self.normalised) != Self.normalised(storage) {
                try await profiles.setPrivateXML([storage], of: username)
            }
            await copyPrivateToPEP(username)
        } catch {
            logger.warning(
                "cannot mirror PEP storage:bookmarks to private storage (XEP-0048)", metadata: ["user": "\(username)", "error": "\(error)"])
        }
    }

    /// Publishes `storage` as the legacy node's item if the account has that node and its
    /// item says otherwise.
    func refreshLegacyPEP(of owner: JID, with storage: XMLElement) async throws {
        guard let username = owner.localpart, try await pep.store.pepNode(Self.legacyNamespace, of: username) != nil else { return }
        let current = try await pep.store.pepItems(node: Self.legacyNamespace, of: username, ids: nil, newest: 1).last
            .flatMap { ProfileXML.parse($0.payload) }
        guard current.map(Self.normalised) != Self.normalised(storage) else { return }
        try await ownWrites.during(.init(username: username, node: Self.legacyNamespace, itemID: "current")) {
            _ = try await pep.publish(owner: owner, node: Self.legacyNamespace, itemID: "current", payload: storage, options: nil)
        }
    }

    /// What two XEP-0048 lists are compared by: their conferences as bookmarks, and the rest
    /// (URL bookmarks) as written.
    static func normalised(_ storage: XMLElement) -> [AnyHashable] {
        let others = storage.elements.filter { !($0.name == "conference" && $0.namespace == legacyNamespace) }
        return [AnyHashable(Bookmark.list(inLegacy: storage)), AnyHashable(others)]
    }
}
