import ParleyCore

/// One XMPP concern of the server (disco, ping, registration, …). A module says what it
/// handles by registering under exact keys; it never reaches into another module.
public protocol ServerModule: Sendable {
    func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error)
}

/// Who an iq is addressed to, as far as dispatch is concerned.
public enum IQTarget: Sendable, Hashable {
    /// The server's own domain JID.
    case server
    /// The bare JID of a local account (the sender's own or another's), answered by the
    /// server on the account's behalf.
    case account
}

/// Handles a presence stanza from a bound session, `from` already stamped. Work that
/// continues asynchronously is returned, so the session can hold its next stanzas until it
/// is done: one stream's stanzas take effect in the order they were sent.
public typealias PresenceHandler = @Sendable (_ presence: XMLElement, _ sender: SessionHandle) -> Task<Void, Never>?

/// Handles a message for `account` that no resource can take; `sender` is nil when the
/// message was already accepted earlier (re-routed from a session that ended). Returns the
/// work that makes it durable, so the sender's session handles nothing after the message
/// until it is stored: any later answer to that client then implies the message is safe.
public typealias UndeliverableMessageHandler = @Sendable (_ message: XMLElement, _ account: JID, _ sender: SessionHandle?) -> Task<Void, Never>?

/// A message on its way between local accounts, as each party sees it: the archive stamps
/// each copy with the stanza-id of that party's archive (XEP-0359).
public struct RoutedMessage: Sendable {
    /// What the recipient's resources get (and received carbons forward).
    public var forRecipient: XMLElement
    /// What sent carbons forward to the sender's other resources.
    public var forSender: XMLElement
    /// Set when the archive is behind: the sender's stream waits on it before its next
    /// stanza, so a fast sender is slowed to what storage can keep instead of filling memory.
    public var backpressure: Task<Void, Never>?
    /// The archive's sequence numbers for the message's rows: an XEP-0198 acknowledgement
    /// covering the message waits until they are committed.
    public var archived: ClosedRange<UInt64>?
    /// Set for a message that tells its recipient an earlier one arrived (a delivery receipt,
    /// a chat marker): it is delivered only once this completes (its archive rows, and so
    /// those of every message routed before it, are committed), so no sender learns that a
    /// message arrived before the server has stored it.
    public var deliverAfter: Task<Void, Never>?

    public init(
        forRecipient: XMLElement, forSender: XMLElement, backpressure: Task<Void, Never>? = nil, archived: ClosedRange<UInt64>? = nil
    ) {
        self.forRecipient = forRecipient
        self.forSender = forSender
        self.backpressure = backpressure
        self.archived = archived
    }
}

/// Sees every message a local session sends to a local account before it is delivered
/// (archiving, XEP-0313), and returns what to deliver. Runs synchronously, in routing order.
public typealias MessageArchiver = @Sendable (_ message: XMLElement, _ sender: JID, _ recipient: JID) -> RoutedMessage

/// Told about a message after it was routed, with the sessions it went to (carbons, XEP-0280).
public typealias MessageCopier = @Sendable (_ message: RoutedMessage, _ sender: SessionHandle, _ recipient: JID, _ deliveredTo: [SessionHandle]) -> Void

/// Decides, before anything else happens to it, whether a message a local session sends to a
/// local account is routed at all; false drops it silently (it still counts as handled).
public typealias MessageFilter = @Sendable (_ message: XMLElement, _ sender: SessionHandle, _ recipient: JID) -> Bool

/// Work to finish before a message `username` sent is counted and routed (loading
/// per-account state); nil when there is none, so the usual message does not pay for a task.
public typealias MessagePreparer = @Sendable (_ message: XMLElement, _ username: String) -> Task<Void, Never>?

public struct IQKey: Sendable, Hashable, CustomStringConvertible {
    public var kind: IQKind
    public var name: String
    public var namespace: String

    public var description: String { "iq \(kind.rawValue) {\(namespace)}\(name)" }
}

/// The dispatch table built once at start-up from every module. Keys are exact: two modules
/// claiming the same key is a programming error reported at start, never a silent override.
/// What is registered is also what disco#info advertises.
public struct ModuleRegistry: Sendable {
    public enum Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
        case duplicateHandler(IQTarget, String)
        public var description: String {
            switch self {
            case .duplicateHandler(let target, let key): "two modules handle \(key) for \(target)"
            }
        }
    }

    private(set) var handlers: [IQTarget: [IQKey: IQHandler]] = [:]
    private(set) var features: [IQTarget: Set<String>] = [:]
    private(set) var identities: [IQTarget: [DiscoIdentity]] = [:]
    private(set) var infoForms: [IQTarget: [XMLElement]] = [:]
    public private(set) var streamFeatures: [XMLElement] = []
    private(set) var presenceHandler: PresenceHandler?
    private(set) var undeliverableMessageHandler: UndeliverableMessageHandler?
    private(set) var messageArchiver: MessageArchiver?
    private(set) var messageCopier: MessageCopier?
    private(set) var messageFilter: MessageFilter?
    private(set) var messagePreparer: MessagePreparer?

    public init() {}

    /// Takes every presence stanza bound sessions send (RFC 6121 §3–4 belong to one module).
    public mutating func handlePresence(_ handler: @escaping PresenceHandler) throws(Error) {
        if presenceHandler != nil { throw .duplicateHandler(.account, "presence") }
        presenceHandler = handler
    }

    /// Takes chat and normal messages for a local account with no available resource
    /// (RFC 6121 §8.5.2.2.1: store them offline, or the router bounces them).
    public mutating func handleUndeliverableMessages(_ handler: @escaping UndeliverableMessageHandler) throws(Error) {
        if undeliverableMessageHandler != nil { throw .duplicateHandler(.account, "undeliverable messages") }
        undeliverableMessageHandler = handler
    }

    public mutating func archiveMessages(_ archiver: @escaping MessageArchiver) throws(Error) {
        if messageArchiver != nil { throw .duplicateHandler(.account, "message archiving") }
        messageArchiver = archiver
    }

    public mutating func copyMessages(_ copier: @escaping MessageCopier) throws(Error) {
        if messageCopier != nil { throw .duplicateHandler(.account, "message copies") }
        messageCopier = copier
    }

    public mutating func filterMessages(_ filter: @escaping MessageFilter) throws(Error) {
        if messageFilter != nil { throw .duplicateHandler(.account, "message filtering") }
        messageFilter = filter
    }

    /// Runs before a bound session's message is counted and routed; a returned task holds
    /// the stream (in order) until per-account state the routing needs is loaded.
    public mutating func prepareMessages(_ preparer: @escaping MessagePreparer) throws(Error) {
        if messagePreparer != nil { throw .duplicateHandler(.account, "message preparation") }
        messagePreparer = preparer
    }

    /// An element announced in the stream features after authentication, such as
    /// `<ver xmlns='urn:xmpp:features:rosterver'/>`.
    public mutating func advertiseStreamFeature(_ feature: XMLElement) {
        streamFeatures.append(feature)
    }

    public mutating func handle(
        _ kind: IQKind, _ name: String, namespace: String, for target: IQTarget = .server,
        advertise: Bool = true, _ handler: @escaping IQHandler
    ) throws(Error) {
        let key = IQKey(kind: kind, name: name, namespace: namespace)
        if handlers[target]?[key] != nil { throw .duplicateHandler(target, key.description) }
        handlers[target, default: [:]][key] = handler
        if advertise { features[target, default: []].insert(namespace) }
    }

    /// A feature that is not an iq namespace, such as `urn:xmpp:ping` answered by both sides.
    public mutating func advertise(_ feature: String, for target: IQTarget = .server) {
        features[target, default: []].insert(feature)
    }

    /// An identity disco#info lists besides the target's own (`server/im`, `account/registered`).
    public mutating func advertiseIdentity(_ identity: DiscoIdentity, for target: IQTarget = .server) {
        identities[target, default: []].append(identity)
    }

    /// An XEP-0128 extended information form (`<x xmlns='jabber:x:data' type='result'>` with
    /// a hidden FORM_TYPE) that disco#info carries, such as XEP-0157's serverinfo.
    public mutating func advertiseInfoForm(_ form: XMLElement, for target: IQTarget = .server) {
        infoForms[target, default: []].append(form)
    }

    public func handler(for stanza: XMLElement, kind: IQKind, payload: XMLElement, target: IQTarget) -> IQHandler? {
        handlers[target]?[IQKey(kind: kind, name: payload.name, namespace: payload.namespace ?? "")]
    }

    public func advertisedFeatures(for target: IQTarget) -> [String] {
        (features[target] ?? []).sorted()
    }
}
