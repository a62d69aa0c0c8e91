import Foundation
import NIOConcurrencyHelpers
import ParleyCore
import ParleyStorage

/// The vCards (XEP-0054) and private XML (XEP-0049) of local accounts, behind one API for the
/// modules that answer clients and for in-process code that must keep other data in step
/// (a vCard photo and the PEP avatar, XEP-0398; private bookmarks and PEP bookmarks,
/// XEP-0411). Every write, from a client or from such code, is checked against the same
/// limits and reported to every observer once it is stored.
public final class ProfileService: Sendable {
    public struct Limits: Sendable, Hashable {
        /// The largest vCard, serialized; photos make up most of it.
        public var maxVCardBytes = 65_536
        /// The largest element kept in private storage, serialized.
        public var maxPrivateElementBytes = 65_536
        /// Elements (distinct name and namespace) one account may keep in private storage.
        public var maxPrivateElements = 100
        public init() {}
    }

    /// A stored change, with the full JID of the session that made it (nil when in-process
    /// code did, so a synchronizer can tell its own writes from the user's).
    public enum Change: Sendable {
        /// The account's new vCard and the XEP-0153 hash of its photo.
        case vCard(username: String, vCard: XMLElement, photoHash: String?, by: JID?)
        /// An element of private storage was written, or removed (`element` nil).
        case privateXML(username: String, name: String, namespace: String, element: XMLElement?, by: JID?)
    }

    public static let vCardNamespace = "vcard-temp"

    public let limits: Limits
    let vCards: any VCardStore
    let privateStore: any PrivateXMLStore
    private let observers = NIOLockedValueBox([@Sendable (Change) -> Void]())
    private let awaitedObservers = NIOLockedValueBox([@Sendable (Change) async -> Void]())

    public init(vCards: any VCardStore, privateXML: any PrivateXMLStore, limits: Limits = Limits()) {
        self.vCards = vCards
        self.privateStore = privateXML
        self.limits = limits
    }

    /// Calls `observer` after every stored change, on the writer's task; it must hand longer
    /// work elsewhere.
    public func observe(_ observer: @escaping @Sendable (Change) -> Void) {
        observers.withLockedValue { $0.append(observer) }
    }

    /// Like `observe`, but awaited before the write returns (so before the client hears it
    /// succeeded): for mirrors whose result a client may read right after its reply.
    public func observeAwaiting(_ observer: @escaping @Sendable (Change) async -> Void) {
        awaitedObservers.withLockedValue { $0.append(observer) }
    }

    private func publish(_ change: Change) async {
        for observer in observers.withLockedValue({ $0 }) { observer(change) }
        for observer in awaitedObservers.withLockedValue({ $0 }) { await observer(change) }
    }

    // MARK: vCard

    /// The account's vCard; nil if it has none (or there is no such account).
    public func vCard(of username: String) async throws -> XMLElement? {
        guard let stored = try await vCards.vCard(of: username) else { return nil }
        guard let element = ProfileXML.parse(stored.xml) else {
            throw StanzaError(.internalServerError, text: "The stored vCard cannot be read.")
        }
        return element
    }

    /// The XEP-0153 hash of the account's vCard photo; nil if it has no vCard or no photo.
    public func photoHash(of username: String) async throws -> String? {
        try await vCards.vCard(of: username)?.photoHash
    }

    /// Replaces the account's vCard. Throws a `StanzaError` saying what is wrong with it
    /// (too large, a photo that is not base64).
    public func setVCard(_ vCard: XMLElement, of username: String, by origin: JID? = nil) async throws {
        guard vCard.name == "vCard", vCard.namespace == Self.vCardNamespace else {
            throw StanzaError(.badRequest, text: "A vCard is a <vCard xmlns='vcard-temp'/> element.")
        }
        let xml = ProfileXML.serialize(vCard)
        let size = xml.utf8.count
        guard size <= limits.maxVCardBytes else {
            throw StanzaError(
                .notAcceptable,
                text: "The vCard is \(size) bytes; this server keeps vCards of up to \(limits.maxVCardBytes) bytes (a smaller photo helps).")
        }
        let photoHash: String?
        do {
            photoHash = try VCardPhoto.hash(of: vCard)
        } catch .notBase64 {
            throw StanzaError(.badRequest, text: "The vCard's PHOTO/BINVAL is not valid base64.")
        } catch {
            throw StanzaError(.internalServerError, text: "The server cannot hash the vCard's photo.")
        }
        try await vCards.setVCard(StoredVCard(xml: xml, photoHash: photoHash, updatedAt: Date()), for: username)
        await publish(.vCard(username: username, vCard: vCard, photoHash: photoHash, by: origin))
    }

    // MARK: Private XML

    /// Each requested element as stored, in the order asked; nil for those never stored.
    public func privateXML(of username: String, _ keys: [(name: String, namespace: String)]) async throws -> [XMLElement?] {
        let stored = try await privateStore.privateXML(of: username, keys)
        return try stored.map { text in
            guard let text else { return nil }
            guard let element = ProfileXML.parse(text) else {
                throw StanzaError(.internalServerError, text: "A stored private element cannot be read.")
            }
            return element
        }
    }

    /// Stores the elements together (an element with no attributes and no content removes
    /// what was stored under its name). Throws a `StanzaError` for a reserved namespace
    /// (XEP-0049 §2.3), an element over the size limit, or an account over the count limit.
    public func setPrivateXML(_ elements: [XMLElement], of username: String, by origin: JID? = nil) async throws {
        var writes: [PrivateXMLElement] = []
        for element in elements {
            let namespace = element.namespace ?? ""
            if let reason = Self.reservedReason(namespace) {
                throw StanzaError(.notAcceptable, text: reason)
            }
            if ProfileXML.isEmpty(element) {
                writes.append(PrivateXMLElement(name: element.name, namespace: namespace, xml: nil))
                continue
            }
            let xml = ProfileXML.serialize(element)
            guard xml.utf8.count <= limits.maxPrivateElementBytes else {
                throw StanzaError(
                    .notAcceptable,
                    text: "<\(element.name) xmlns='\(namespace)'/> is \(xml.utf8.count) bytes; this server keeps private elements of up to \(limits.maxPrivateElementBytes) bytes.")
            }
            writes.append(PrivateXMLElement(name: element.name, namespace: namespace, xml: xml))
        }
        guard try await privateStore.setPrivateXML(writes, for: username, maxElements: limits.maxPrivateElements) else {
            throw StanzaError(
                .notAcceptable,
                text: "Private storage holds up to \(limits.maxPrivateElements) elements per account; clear one to store another.")
        }
        for (element, write) in zip(elements, writes) {
            let stored = write.xml == nil ? nil : element
            await publish(.privateXML(username: username, name: write.name, namespace: write.namespace, element: stored, by: origin))
        }
    }

    /// XEP-0049 §2.3: namespaces the protocol itself lives in, or that other protocols own,
    /// are not a client's to store under.
    static func reservedReason(_ namespace: String) -> String? {
        if namespace.isEmpty { return "A private element needs a namespace of its own." }
        if namespace == vCardNamespace || namespace.hasPrefix("jabber:") || namespace.hasPrefix("http://jabber.org/") {
            return "The namespace '\(namespace)' is reserved (XEP-0049); store data under a namespace of your own."
        }
        return nil
    }
}
