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
/// once it was written to a session; if the session dies first, it stays for the next one.
public final class OfflineModule: ServerModule, Sendable {
    public static let feature = "msgoffline"
    static let delayNamespace = "urn:xmpp:delay"
    static let hintsNamespace = "urn:xmpp:hints"

    let domain: JID
    let store: any OfflineStore
    let quota: Int
    let logger: Logger
    let writer: OfflineWriter

    public init(domain: JID, store: any OfflineStore, quota: Int, logger: Logger) {
        self.domain = domain
        self.store = store
        self.quota = quota
        self.logger = logger
        self.writer = OfflineWriter(store: store, quota: quota, logger: logger)
    }

    public func register(in registry: inout ModuleRegistry) throws(ModuleRegistry.Error) {
        registry.advertise(Self.feature)
        try registry.handleUndeliverableMessages { [self] message, account, sender in
            accept(message, for: account, from: sender)
        }
    }

    private func accept(_ message: XMLElement, for account: JID, from sender: SessionHandle?) {
        switch message.type ?? "normal" {
        case "chat", "normal":
            break
        case "groupchat":
            if let sender, let reply = message.errorReply(StanzaError(.serviceUnavailable)) { sender.deliver(reply) }
            return
        default:
            return  // headline and error: silently dropped (RFC 6121 §8.5.2.2.1)
        }
        // Chat states and other content-free messages are not kept (XEP-0334), nor are
        // messages their sender marked not to be stored; like headlines they just lapse.
        let hasContent = message.firstChild("body") != nil || message.firstChild("subject") != nil
            || message.firstChild("store", namespace: Self.hintsNamespace) != nil
        guard hasContent, message.firstChild("no-store", namespace: Self.hintsNamespace) == nil,
            let username = account.localpart
        else { return }
        var stamped = message
        stamped.removeChildren { $0.name == "delay" && $0.namespace == Self.delayNamespace }
        stamped.append(
            XMLElement(
                "delay", namespace: Self.delayNamespace, ["from": domain.description, "stamp": Self.timestamp(Date())],
                text: "Offline Storage"))
        writer.enqueue(user: username, stanza: StoredStanza.serialize(stamped)) { [logger] result in
            switch result {
            case .success:
                return
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
    }

    /// Sends every stored message to a session that just became available, oldest first,
    /// deleting each batch only after it was handed to the session's socket.
    public func deliver(to session: SessionHandle) async {
        guard let username = session.jid.localpart else { return }
        while session.isAvailable {
            let batch: [OfflineMessage]
            do {
                batch = try await store.offlineMessages(for: username, limit: 500)
            } catch {
                logger.error("cannot read offline messages", metadata: ["user": "\(username)", "error": "\(error)"])
                return
            }
            if batch.isEmpty { return }
            var written: [(Int64, EventLoopFuture<Void>)] = []
            for message in batch {
                guard var stanza = StoredStanza.parse(message.stanza) else {
                    written.append((message.id, session.eventLoop.makeSucceededVoidFuture()))  // unreadable: drop it
                    continue
                }
                stanza.to = session.jid.description
                let promise = session.eventLoop.makePromise(of: Void.self)
                session.deliver(stanza, written: promise)
                written.append((message.id, promise.futureResult))
            }
            var delivered: [Int64] = []
            for (id, future) in written {
                guard (try? await future.get()) != nil else { break }
                delivered.append(id)
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
            if pending.writing { return false }
            pending.writing = true
            return true
        }
        if start { Task { await drain() } }
    }

    private func drain() async {
        while true {
            let batch = pending.withLockedValue { pending -> [(OfflineStoreRequest, Completion)] in
                let batch = Array(pending.requests.prefix(512))
                pending.requests.removeFirst(batch.count)
                if batch.isEmpty { pending.writing = false }
                return batch
            }
            if batch.isEmpty { return }
            let results = await store.storeOffline(batch.map(\.0))
            for (result, (_, completion)) in zip(results, batch) { completion(result) }
        }
    }
}
