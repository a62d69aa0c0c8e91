import Foundation
import Logging
import NIOConcurrencyHelpers
import ParleyCore
import ParleyServer

/// XEP-0198 resumption on another node: behind a load balancer, a client whose connection
/// dropped often comes back on a node that does not hold its session. That node asks the
/// nodes holding the account's sessions (the directory says which) through their inboxes;
/// the one holding the session hands it over (out of its routing, its connection closed) and
/// answers through the asking node's inbox with the session's state, which the asking node
/// adopts and resumes as its own. A node that died holds nothing any more (its inbox went
/// to offline storage), so the client is told `item-not-found` as before.
final class ClusterResumption: Sendable {
    /// What the asking node sends: one field a line.
    struct Request: Equatable {
        var id: String
        var from: String
        var previd: String
        var user: String
        var accountID: Int64?

        var text: String { [id, from, previd, user, accountID.map(String.init) ?? ""].joined(separator: "\n") }

        init(id: String, from: String, previd: String, user: String, accountID: Int64?) {
            self.id = id
            self.from = from
            self.previd = previd
            self.user = user
            self.accountID = accountID
        }

        init?(_ text: String) {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            guard lines.count == 5, !lines[0].isEmpty, !lines[1].isEmpty, !lines[2].isEmpty, !lines[3].isEmpty else { return nil }
            self.init(id: lines[0], from: lines[1], previd: lines[2], user: lines[3], accountID: Int64(lines[4]))
        }
    }

    /// How long the asking node waits for each node's answer: the other node answers from
    /// memory after at most an archive commit, so this only bounds a node that is dying.
    static let answerTimeout: Duration = .seconds(10)

    private let node: String
    private let writer: ClusterWriter
    private let logger: Logger
    /// Requests waiting for an answer, by id: the node asked, and the waiter.
    private let waiting = NIOLockedValueBox([String: (node: String, continuation: CheckedContinuation<String?, Never>)]())

    init(node: String, writer: ClusterWriter, logger: Logger) {
        self.node = node
        self.writer = writer
        self.logger = logger
    }

    /// Asks `nodes` in turn; the first to hold the session hands it over.
    func takeOver(previd: String, user: String, accountID: Int64?, domain: JID, from nodes: [String]) async -> SessionTransfer? {
        for holder in nodes {
            let request = Request(id: TimeOrderedUUID.make(), from: node, previd: previd, user: user, accountID: accountID)
            guard let answer = await ask(holder, request, account: "\(user)@\(domain.domainpart)"), !answer.isEmpty else { continue }
            guard let element = StoredStanza.parse(answer), let transfer = SessionTransfer(element) else {
                logger.error("unreadable session handed over by another node", metadata: ["node": "\(holder)"])
                return nil
            }
            return transfer
        }
        return nil
    }

    private func ask(_ holder: String, _ request: Request, account: String) async -> String? {
        let id = request.id
        let timeout = Task {
            try await Task.sleep(for: Self.answerTimeout)
            self.answered(id, nil)
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { continuation in
            waiting.withLockedValue { $0[id] = (holder, continuation) }
            writer.enqueue(.inbox(node: holder, target: account, kind: .resumeRequest, stanza: request.text, done: nil))
        }
    }

    /// A `resumeReply` row arrived (or the wait timed out: nil, and no host).
    func answered(_ id: String, _ text: String?, host: ClusterHost? = nil) {
        guard let continuation = waiting.withLockedValue({ $0.removeValue(forKey: id)?.continuation }) else {
            if let text, !text.isEmpty, let host { handOn(text, host: host) }
            return
        }
        continuation.resume(returning: text)
    }

    /// `node` left the cluster (died, or stopped): it will answer nothing, and its sessions
    /// ended with it, so whoever waits for it is told there is nothing to resume.
    func nodeGone(_ node: String) {
        let gone = waiting.withLockedValue { waiting in
            let ids = waiting.filter { $0.value.node == node }.map(\.key)
            return ids.compactMap { waiting.removeValue(forKey: $0)?.continuation }
        }
        for continuation in gone { continuation.resume(returning: nil) }
    }

    /// A session handed over after its asker gave up: no client waits for it here, so its
    /// unacknowledged messages go on as when a session ends (other resources, or offline).
    private func handOn(_ text: String, host: ClusterHost) {
        guard let transfer = StoredStanza.parse(text).flatMap(SessionTransfer.init) else { return }
        logger.warning(
            "a session was handed over after its resumption here gave up; its unacknowledged messages are handed on",
            metadata: ["jid": "\(transfer.jid)", "unacked": "\(transfer.queue.count)"])
        for stanza in transfer.queue where stanza.name == "message" {
            host.router.redeliver(stanza, account: transfer.jid.bare)
        }
    }

    /// On the holding node: a request from another node's client.
    func handle(_ text: String, host: ClusterHost) {
        guard let request = Request(text) else {
            return logger.error("unreadable session resumption request from another node")
        }
        let writer = writer
        Task {
            let handed = await host.handOver(request.previd, request.user, request.accountID)
            let answer = handed.map { StoredStanza.serialize($0.transfer.element) } ?? ""
            writer.enqueue(
                .inbox(node: request.from, target: request.id, kind: .resumeReply, stanza: answer) { handed?.committed() })
        }
    }
}
