import Foundation

#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ParleyCore
import ParleyStorage

/// XEP-0160 offline messages: chat and normal messages for an account with no available
/// resource are stored durably, stamped with XEP-0203 `<delay/>`, and delivered in order at
/// the next available presence with non-negative priority. A stored message is deleted only
/// once it was written to a session (with XEP-0198 stream management: once the client
/// acknowledged it); if the session dies first, it stays for the next one.
/// A message whose write completes when the account already has an available resource (it
/// became available while the message was on its way to the store, so its initial delivery
/// may have read the store too early) is delivered right away instead of waiting for the
/// next login. Deliveries for one account run one at a time, so none is sent twice.
public final class OfflineModule: ServerModule, Sendable {
    public static let feature = "msgoffline"

    let domain: JID
    let store: any OfflineStore
    let quota: Int
    let logger: Logger
    let writer: OfflineWriter
    let sessions: SessionRegistry
    let deliveries = UserQueue()
    /// Told of every account a message was stored for (a cluster tells the other nodes, where
    /// the account may have an available session this node did not know of yet).
    private let storeObservers = NIOLockedValueBox([@Sendable (JID) -> Void]())

    public func observeStores(_ observer: @escaping @Sendable (JID) -> Void) {
        storeObservers.withLockedValue { $0.append(observer) }
    }

    public init(domain: JID, store: any OfflineStore, quota: Int, sessions: SessionRegistry, logger: Logger) {
        self.domain = domain
        self.store = store
        self.quota = quota
        self.sessions = sessions
        self.logger = logger
        self.writer = OfflineWriter(store: store, quota: quota, logger: logger)
    }

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        registry.advertise(Self.feature)
        try registry.handleUndeliverableMessages { [self] message, account, sender in
            accept(message, for: account, from: sender)
        }
    }

    private func accept(_ message: XMLElement, for account: JID, from sender: SessionHandle?) -> Task<Void, Never>? {
        switch message.type ?? "normal" {
        case "chat", "normal":
            break
        case "groupchat":
            if let sender, let reply = message.errorReply(StanzaError(.serviceUnavailable)) { sender.deliver(reply) }
            return nil
        default:
            return nil  // headline and error: silently dropped (RFC 6121 §8.5.2.2.1)
        }
        guard let username = account.localpart, let stamped = Self.storedForm(of: message, domain: domain, at: Date()) else {
            return nil
        }
        // Enqueued here, synchronously, so messages are stored in the order they were routed.
        let (stored, storedContinuation) = AsyncStream.makeStream(of: Void.self)
        writer.enqueue(user: username, stanza: StoredStanza.serialize(stamped)) { [self, logger] result in
            defer { storedContinuation.finish() }
            switch result {
            case .success:
                deliverIfAvailable(account.bare)
                for observer in storeObservers.withLockedValue({ $0 }) { observer(account.bare) }
            case .failure(StorageError.quotaExceeded(let limit)):
                sender.flatMap { sender in
                    message.errorReply(StanzaError(.resourceConstraint, text: "The recipient has \(limit) messages waiting; no more can be stored."))
                        .map(sender.deliver)
                }
            case .failure(StorageError.accountNotFound):
                sender.flatMap { sender in message.errorReply(StanzaError(.serviceUnavailable)).map(sender.deliver) }
            case .failure(let error):
                logger.error("offline message not stored", metadata: ["user": "\(username)", "error": "\(error)"])
                sender.flatMap { sender in
                    message.errorReply(StanzaError(.internalServerError, text: "The message could not be stored.")).map(sender.deliver)
                }
            }
        }
        return Task { for await _ in stored {} }
    }

    /// The form in which a chat or normal message is kept for later (XEP-0203 `<delay/>`
    /// stamped), or nil for one that is not kept: chat states and other content-free messages
    /// (XEP-0334) and those their sender marked not to be stored just lapse, like headlines.
    /// The cluster stores a dead node's undelivered messages with it.
    public static func storedForm(of message: XMLElement, domain: JID, at date: Date) -> XMLElement? {
        guard message.name == "message", ["chat", "normal"].contains(message.type ?? "normal") else { return nil }
        let hasContent = message.firstChild("body") != nil || message.firstChild("subject") != nil
            || message.firstChild("store", namespace: XMLNamespace.hints) != nil
        guard hasContent, message.firstChild("no-store", namespace: XMLNamespace.hints) == nil else { return nil }
        var stamped = message
        stamped.removeChildren { $0.name == "delay" && $0.namespace == XMLNamespace.delay }
        // Empty, as Prosody sends it: the XEP-0203 text is a human-readable reason that
        // clients show verbatim, and "where it waited" tells a user nothing.
        stamped.append(
            XMLElement("delay", namespace: XMLNamespace.delay, ["from": domain.description, "stamp": Self.timestamp(date)]))
        return stamped
    }

    /// Sends every stored message to a session that just became available, oldest first,
    /// deleting each batch only after it was handed to the session's socket (or, with
    /// XEP-0198, acknowledged). Returns once the first batch is on its way to the session:
    /// waiting for acknowledgements here would hold the session's own stanzas, its `<a/>`
    /// among them.
    public func deliver(to session: SessionHandle) async {
        guard let username = session.jid.localpart else { return }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            deliveries.enqueue(username) { [self] in
                await deliverStored(to: session, username: username) { done.resume() }
            }
        }
    }

    /// After a store: the account may have become available meanwhile, past its initial
    /// delivery (RFC 6121 §8.5.2.1.1 wants the message delivered to an available resource).
    /// Also called by a cluster when another node stored messages for the account (a dead
    /// node's inbox), which this node's available sessions would otherwise wait for.
    public func deliverIfAvailable(_ account: JID) {
        guard let username = account.localpart else { return }
        // Only this node's sessions: a session on another node of a cluster is served by its own.
        let available = sessions.sessions(of: account).filter { !$0.isRemote && $0.isAvailable && $0.priority >= 0 }
        guard let target = available.max(by: { $0.priority < $1.priority }) else { return }
        deliveries.enqueue(username) { [self] in await deliverStored(to: target, username: username) }
    }

    private func deliverStored(to session: SessionHandle, username: String, handedOver: (@Sendable () -> Void)? = nil) async {
        var handedOver = handedOver
        defer { handedOver?() }
        // A message accepted for storage just before the session became available may not
        // be written yet; reading before it is would leave it stored while the user is online.
        await writer.waitForAccepted()
        while session.isAvailable {
            let batch: [OfflineMessage]
            do {
                batch = try await store.offlineMessages(for: username, limit: 500)
            } catch {
                logger.error("cannot read offline messages", metadata: ["user": "\(username)", "error": "\(error)"])
                return
            }
            if batch.isEmpty { return }
            var written: [EventLoopFuture<Void>] = []
            let recipient = session.jid.description
            for parsed in StoredStanza.parseAll(batch.map(\.stanza)) {
                guard var stanza = parsed else {
                    written.append(session.eventLoop.makeSucceededVoidFuture())  // unreadable: drop it
                    continue
                }
                stanza.to = recipient
                let promise = session.eventLoop.makePromise(of: Void.self)
                session.deliver(stanza, written: promise)
                written.append(promise.futureResult)
            }
            handedOver?()
            handedOver = nil
            // One wait for the whole batch; what was delivered is the run of successes from
            // the start (a failure means the session ended there).
            let outcomes = (try? await EventLoopFuture.whenAllComplete(written, on: session.eventLoop).get()) ?? []
            var delivered: [Int64] = []
            for (message, outcome) in zip(batch, outcomes) {
                guard case .success = outcome else { break }
                delivered.append(message.id)
            }
            do {
                try await store.deleteOffline(user: username, ids: delivered)
            } catch {
                logger.error("cannot delete delivered offline messages", metadata: ["user": "\(username)", "error": "\(error)"])
                return
            }
            if delivered.count < batch.count { return }
        }
    }

    /// XEP-0082 date-time in UTC with milliseconds, `2024-05-01T12:34:56.789Z`: what
    /// `ISO8601DateFormatter` gives with `.withInternetDateTime, .withFractionalSeconds`.
    /// Formatted by hand: making an `ISO8601DateFormatter` (ICU underneath) for every stored
    /// message was about 40% of the server's CPU time when storing offline messages.
    static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        var seconds = time_t(milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000)
        let fraction = Int(milliseconds - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(fraction), 3))Z"
    }
}

/// Hands offline messages to the store in the order they were accepted: one writer drains the
/// queue and submits each batch as one ordered unit (the store group-commits it).
final class OfflineWriter: Sendable {
    typealias Completion = @Sendable (Result<Int64, Error>) -> Void

    private struct Pending {
        var requests: [(OfflineStoreRequest, Completion)] = []
        var writing = false
        /// Requests accepted and requests whose write finished, ever.
        var accepted = 0
        var finished = 0
        var waiters: [(target: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let store: any OfflineStore
    private let quota: Int
    private let logger: Logger
    private let pending = NIOLockedValueBox(Pending())

    init(store: any OfflineStore, quota: Int, logger: Logger) {
        self.store = store
        self.quota = quota
        self.logger = logger
    }

    func enqueue(user: String, stanza: String, completion: @escaping Completion) {
        let start = pending.withLockedValue { pending -> Bool in
            pending.requests.append((OfflineStoreRequest(user: user, stanza: stanza, quota: quota), completion))
            pending.accepted += 1
            if pending.writing { return false }
            pending.writing = true
            return true
        }
        if start { Task { await drain() } }
    }

    /// Waits until everything accepted so far has been handed to the store and committed:
    /// shutdown calls this so that no accepted message dies with the process.
    func waitUntilIdle(deadline: ContinuousClock.Instant) async {
        while pending.withLockedValue({ $0.writing || !$0.requests.isEmpty }), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Takes everything queued at once (shifting a long array per batch is quadratic) and
    /// submits it in ordered batches of up to 4,096 (one transaction each, with the archive
    /// rows waiting at the time: bench/README.md).
    private func drain() async {
        var taken: [(OfflineStoreRequest, Completion)] = []
        var next = 0
        while true {
            if next == taken.count {
                taken = pending.withLockedValue { pending -> [(OfflineStoreRequest, Completion)] in
                    let all = pending.requests
                    pending.requests = []
                    if all.isEmpty { pending.writing = false }
                    return all
                }
                next = 0
                if taken.isEmpty { return }
            }
            let batch = Array(taken[next..<min(next + 4096, taken.count)])
            next += batch.count
            let results = await store.storeOffline(batch.map(\.0))
            for (result, (_, completion)) in zip(results, batch) { completion(result) }
            let ready = pending.withLockedValue { pending -> [CheckedContinuation<Void, Never>] in
                pending.finished += batch.count
                let finished = pending.finished
                let ready = pending.waiters.filter { $0.target <= finished }.map(\.continuation)
                pending.waiters.removeAll { $0.target <= finished }
                return ready
            }
            for continuation in ready { continuation.resume() }
        }
    }

    /// Returns once every request accepted before the call has been written (or failed).
    func waitForAccepted() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = pending.withLockedValue { pending -> Bool in
                if pending.finished >= pending.accepted { return true }
                pending.waiters.append((pending.accepted, continuation))
                return false
            }
            if done { continuation.resume() }
        }
    }
}
