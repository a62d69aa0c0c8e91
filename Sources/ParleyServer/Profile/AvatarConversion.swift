import Logging
import NIOConcurrencyHelpers
import ParleyCore
import ParleyStorage

/// XEP-0398: one avatar and one nickname, whichever protocol a client uses. A vCard
/// (XEP-0054/0153) written by a client is mirrored to PEP (XEP-0084 avatar data and
/// metadata, XEP-0172 nick); avatar metadata or a nick published to PEP is mirrored into the
/// vCard. Each job copies the *current* state of the side that changed to the other side,
/// and writes only what differs, so the notifications the mirror's own writes cause find
/// both sides equal and stop there (no loop, one notification per change). Jobs of one
/// account run in order. `stamp(_:from:)` puts the resulting hash into presence (§4).
public final class AvatarConversion: ServerModule {
    public static let feature = "urn:xmpp:pep-vcard-conversion:0"
    static let dataNode = "urn:xmpp:avatar:data"
    static let metadataNode = "urn:xmpp:avatar:metadata"
    static let nickNode = "http://jabber.org/protocol/nick"
    static let vCardNamespace = ProfileService.vCardNamespace
    /// Prosody's mod_vcard_legacy creates these nodes open: a vCard is public anyway, and
    /// old clients fetch it without any subscription.
    static let nodeOptions: [(name: String, values: [String])] = [("pubsub#access_model", ["open"])]

    let pep: PEPService
    let profiles: ProfileService
    let logger: Logger
    let queue = UserQueue()
    let ownWrites = MirrorWrites()
    /// The XEP-0153 hash of each account's photo ("" for none), for presence stamping.
    let hashes = NIOLockedValueBox(PhotoHashes())

    public init(pep: PEPService, profiles: ProfileService, events: ServerEventBus, logger: Logger) {
        self.pep = pep
        self.profiles = profiles
        self.logger = logger
        // The bus and the profile service live as long as the server, and so does this.
        profiles.observeAwaiting { change in
            guard case .vCard(let username, _, let photoHash, let origin) = change else { return }
            self.hashes.withLockedValue { $0[username] = photoHash ?? "" }
            // In-process writes are this mirror's own (or an administrator's, already final).
            guard origin != nil else { return }
            // Done before the client's reply: what it reads from PEP next is already there.
            await self.queue.enqueue(username) { await self.copyVCardToPEP(username) }.value
        }
        events.subscribe { event in
            switch event {
            case .pepItemPublished(let owner, let node, let itemID, _) where [Self.metadataNode, Self.dataNode, Self.nickNode].contains(node):
                guard let username = owner.localpart,
                    !self.ownWrites.isOwn(MirrorWrites.Key(username: username, node: node, itemID: itemID))
                else { return }
                // Data counts too: a client that announces the metadata before the bytes
                // are there gets its photo once they arrive.
                self.queue.enqueue(username) {
                    if node == Self.nickNode { await self.copyNickToVCard(username) } else { await self.copyAvatarToVCard(username) }
                }
            case .sessionEnded(let session):
                // Cached for logged-in accounts only, so memory follows who is online (and a
                // deleted account's hash goes with its last session).
                let account = session.jid.bare
                guard let username = account.localpart, self.pep.sessions.sessions(of: account).isEmpty else { return }
                self.hashes.withLockedValue { $0[username] = nil }
            default:
                break
            }
        }
    }

    func owner(_ username: String) -> JID? {
        try? JID(localpart: username, domainpart: pep.domain.domainpart)
    }

    /// Shown on the account's disco#info to its owner (XEP-0398 §3, XEP-0402 §5.3).
    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        registry.advertise(Self.feature, for: .account)
    }

    // MARK: vCard → PEP

    func copyVCardToPEP(_ username: String) async {
        guard let owner = owner(username) else { return }
        do {
            let vCard = try await profiles.vCard(of: username) ?? XMLElement("vCard", namespace: Self.vCardNamespace)
            try await copyPhoto(of: vCard, to: owner, username)
            if let nick = Self.vCardNick(vCard), nick != (try await currentNick(of: username)) {
                let payload = XMLElement("nick", namespace: Self.nickNode, text: nick)
                try await publish(owner, Self.nickNode, id: "current", payload)
            }
        } catch {
            logger.warning(
                "cannot mirror the vCard to PEP (XEP-0398)", metadata: ["user": "\(username)", "error": "\(error)"])
        }
    }

    private func copyPhoto(of vCard: XMLElement, to owner: JID, _ username: String) async throws {
        let current = try await newest(Self.metadataNode, of: username)
        let currentID = current?.payload.firstChild("info", namespace: Self.metadataNode)?[attribute: "id"]
        guard let photo = Self.photo(of: vCard) else {
            // XEP-0084 §4.5: an empty metadata item says "no avatar" to those who had one.
            if currentID != nil {
                try await publish(owner, Self.metadataNode, id: "current", XMLElement("metadata", namespace: Self.metadataNode))
            }
            return
        }
        guard photo.hash != currentID else { return }
        try await publish(owner, Self.dataNode, id: photo.hash, XMLElement("data", namespace: Self.dataNode, text: photo.base64))
        var info = XMLElement("info", ["id": photo.hash, "bytes": "\(photo.byteCount)"])
        info.setAttribute("type", photo.type)
        try await publish(owner, Self.metadataNode, id: photo.hash, XMLElement("metadata", namespace: Self.metadataNode, [:], [info]))
    }

    // MARK: PEP → vCard

    func copyAvatarToVCard(_ username: String) async {
        do {
            guard let metadata = try await newest(Self.metadataNode, of: username)?.payload else { return }
            var vCard = try await profiles.vCard(of: username) ?? XMLElement("vCard", namespace: Self.vCardNamespace)
            let infos = metadata.children("info", namespace: Self.metadataNode)
            if infos.isEmpty {
                guard vCard.firstChild("PHOTO", namespace: Self.vCardNamespace) != nil else { return }
                vCard.removeChildren { $0.name == "PHOTO" }
                return try await profiles.setVCard(vCard, of: username)
            }
            // The first advertised image whose bytes this service holds (others live at URLs).
            for info in infos {
                guard let id = info[attribute: "id"],
                    let data = try await pep.store.pepItems(node: Self.dataNode, of: username, ids: [id], newest: nil).first,
                    let element = ProfileXML.parse(data.payload)
                else { continue }
                if try await profiles.photoHash(of: username) == id { return }
                var photo = XMLElement("PHOTO", namespace: Self.vCardNamespace)
                if let type = info[attribute: "type"] { photo.append(XMLElement("TYPE", text: type)) }
                photo.append(XMLElement("BINVAL", text: Self.compact(element.text)))
                vCard.removeChildren { $0.name == "PHOTO" }
                vCard.append(photo)
                return try await profiles.setVCard(vCard, of: username)
            }
            logger.info("avatar metadata names no image stored here; the vCard keeps its photo", metadata: ["user": "\(username)"])
        } catch {
            logger.warning(
                "cannot mirror the PEP avatar to the vCard (XEP-0398)", metadata: ["user": "\(username)", "error": "\(error)"])
        }
    }

    func copyNickToVCard(_ username: String) async {
        do {
            guard let nick = try await currentNick(of: username) else { return }
            var vCard = try await profiles.vCard(of: username) ?? XMLElement("vCard", namespace: Self.vCardNamespace)
            guard Self.vCardNick(vCard) != nick else { return }
            vCard.removeChildren { $0.name == "NICKNAME" }
            vCard.append(XMLElement("NICKNAME", text: nick))
            try await profiles.setVCard(vCard, of: username)
        } catch {
            logger.warning(
                "cannot mirror the PEP nick to the vCard (XEP-0398)", metadata: ["user": "\(username)", "error": "\(error)"])
        }
    }

    // MARK: Helpers

    /// The node's newest item, parsed; nil when the node or its items do not exist.
    func newest(_ node: String, of username: String) async throws -> (id: String, payload: XMLElement)? {
        guard let item = try await pep.store.pepItems(node: node, of: username, ids: nil, newest: 1).last,
            let payload = ProfileXML.parse(item.payload)
        else { return nil }
        return (item.id, payload)
    }

    private func currentNick(of username: String) async throws -> String? {
        guard let payload = try await newest(Self.nickNode, of: username)?.payload, payload.name == "nick" else { return nil }
        let nick = payload.text.trimmingCharacters(in: .whitespacesAndNewlines)
        return nick.isEmpty ? nil : nick
    }

    /// Publishes as the owner; a node this creates gets Prosody's options, an existing one
    /// keeps the configuration its owner chose.
    private func publish(_ owner: JID, _ node: String, id: String, _ payload: XMLElement) async throws {
        let username = owner.localpart ?? ""
        let exists = try await pep.store.pepNode(node, of: username) != nil
        try await ownWrites.during(MirrorWrites.Key(username: username, node: node, itemID: id)) {
            _ = try await pep.publish(owner: owner, node: node, itemID: id, payload: payload, options: exists ? nil : Self.nodeOptions)
        }
    }

    static func vCardNick(_ vCard: XMLElement) -> String? {
        let nick = vCard.firstChild("NICKNAME", namespace: vCardNamespace)?.text.trimmingCharacters(in: .whitespacesAndNewlines)
        return nick?.isEmpty == false ? nick : nil
    }

    /// The inline photo of a vCard: its hash (XEP-0153's, which is also XEP-0084's item id),
    /// base64 without line breaks, size and type. nil for none or a link (EXTVAL), which
    /// has no bytes to hash.
    static func photo(of vCard: XMLElement) -> (hash: String, base64: String, byteCount: Int, type: String?)? {
        guard let photo = vCard.firstChild("PHOTO", namespace: vCardNamespace),
            let binval = photo.firstChild("BINVAL", namespace: vCardNamespace),
            let hash = try? VCardPhoto.hash(of: vCard)
        else { return nil }
        let base64 = compact(binval.text)
        guard let bytes = try? Base64.decode(base64) else { return nil }
        let type = photo.firstChild("TYPE", namespace: vCardNamespace)?.text.trimmingCharacters(in: .whitespacesAndNewlines)
        return (hash, base64, bytes.count, type?.isEmpty == false ? type : nil)
    }

    static func compact(_ base64: String) -> String {
        String(base64.unicodeScalars.filter { !$0.properties.isWhitespace })
    }
}
