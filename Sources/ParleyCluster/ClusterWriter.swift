import Foundation
import Logging
import NIOConcurrencyHelpers
import ParleyServer
import PostgresNIO

/// Everything one node writes to the cluster's tables, in the order it happened, group
/// committed: whatever arrives while a transaction is being written goes into the next one.
/// One writer per node keeps a node's stanzas to another node in order (their inbox ids
/// grow in commit order), and its directory changes ahead of the stanzas that follow them.
///
/// A transaction that fails is tried again until it commits: the callers waiting on it (the
/// senders' acknowledgements) wait with it, since a stanza not in the database is not
/// safe yet.
final class ClusterWriter: Sendable {
    enum Operation: Sendable {
        /// Takes the session's JID in the directory (the newest bind wins).
        case bind(SessionHandle)
        /// Writes the session's current view, if the entry is still this session's.
        case update(SessionHandle)
        /// Removes the session's entry, if it is still this session's.
        case end(SessionHandle)
        /// As `end`, for a session handed over to another node (its notice says so).
        case move(SessionHandle)
        /// A stanza for `target` (a full JID) into `node`'s inbox.
        case inbox(node: String, target: String, kind: InboxKind, stanza: String, done: (@Sendable () -> Void)?)
        /// Inbox rows this node has delivered.
        case delivered([Int64])
        /// A notice for every node, sent when what comes before it is committed.
        case notice(String)
        /// A room's member as its holder keeps it (`data`), or its departure (nil).
        case roomMember(service: String, room: String, jid: String, node: String, data: String?)
        /// Writes nothing: `done` runs once everything queued before it is committed.
        case marker(@Sendable () -> Void)
    }

    private struct State {
        var queue: [Operation] = []
        var writing = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        /// Open `hold()`s: nothing queued is written until the last is released.
        var holds = 0
        /// The queue's first `together` operations go into one transaction (held ones).
        var together = 0
    }

    let node: String
    private let client: PostgresClient
    private let logger: Logger
    private let state = NIOLockedValueBox(State())
    /// Transactions committed, for the benchmark and tests.
    let commits = NIOLockedValueBox(0)

    init(node: String, client: PostgresClient, logger: Logger) {
        self.node = node
        self.client = client
        self.logger = logger
    }

    func enqueue(_ operation: Operation) {
        let start = state.withLockedValue { state -> Bool in
            state.queue.append(operation)
            if state.writing || state.holds > 0 { return false }
            state.writing = true
            return true
        }
        if start { Task.detached { await self.drain() } }
    }

    /// Keeps what is enqueued from now until `release()` in one transaction: a room's
    /// forwarded stanza is deleted from the inbox together with the copies it caused, so a
    /// node's death never leaves one done without the other.
    func hold() {
        state.withLockedValue { $0.holds += 1 }
    }

    func release() {
        let start = state.withLockedValue { state -> Bool in
            state.holds -= 1
            guard state.holds == 0 else { return false }
            state.together = state.queue.count
            if state.writing || state.queue.isEmpty { return false }
            state.writing = true
            return true
        }
        if start { Task.detached { await self.drain() } }
    }

    /// Returns once nothing is queued or being written.
    func waitUntilIdle() async {
        await withCheckedContinuation { continuation in
            let idle = state.withLockedValue { state -> Bool in
                if !state.writing && state.queue.isEmpty { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    private func drain() async {
        while true {
            let (batch, waiters) = state.withLockedValue { state -> ([Operation], [CheckedContinuation<Void, Never>]) in
                if state.queue.isEmpty || state.holds > 0 {
                    state.writing = false
                    guard state.queue.isEmpty else { return ([], []) }
                    defer { state.idleWaiters = [] }
                    return ([], state.idleWaiters)
                }
                let batch = Array(state.queue.prefix(max(1024, state.together)))
                state.queue.removeFirst(batch.count)
                state.together = max(0, state.together - batch.count)
                return (batch, [])
            }
            if batch.isEmpty {
                for waiter in waiters { waiter.resume() }
                return
            }
            var attempt = 0
            while true {
                do {
                    try await write(batch)
                    break
                } catch {
                    attempt += 1
                    logger.error(
                        "cannot write to the cluster's tables; trying again", metadata: ["error": "\(String(reflecting: error))", "attempt": "\(attempt)"])
                    try? await Task.sleep(for: .milliseconds(min(100 * attempt, 2000)))
                }
            }
            commits.withLockedValue { $0 += 1 }
            for operation in batch {
                switch operation {
                case .inbox(_, _, _, _, let done?), .marker(let done): done()
                default: break
                }
            }
        }
    }

    private func write(_ batch: [Operation]) async throws {
        let node = node
        let logger = logger
        // Each session's entry is written as it is at this moment: several changes of one
        // session in a batch are one write.
        var seen = Set<UInt64>()
        var directory: [(Operation, SessionEntry)] = []
        var nodes: [String] = []
        var targets: [String] = []
        var kinds: [Int16] = []
        var stanzas: [String] = []
        var delivered: [Int64] = []
        var notices: [String] = []
        var members: [(service: String, room: String, jid: String, node: String, data: String?)] = []
        for operation in batch {
            switch operation {
            case .bind(let session), .end(let session), .move(let session):
                directory.append((operation, SessionEntry(local: session, node: node)))
                seen.remove(session.id)
            case .update(let session):
                guard seen.insert(session.id).inserted else { continue }
                directory.append((operation, SessionEntry(local: session, node: node)))
            case .inbox(let to, let target, let kind, let stanza, _):
                nodes.append(to)
                targets.append(target)
                kinds.append(kind.rawValue)
                stanzas.append(stanza)
            case .delivered(let ids):
                delivered += ids
            case .notice(let payload):
                notices.append(payload)
            case .roomMember(let service, let room, let jid, let node, let data):
                members.append((service, room, jid, node, data))
            case .marker:
                continue
            }
        }
        let memberWrites = members
        let directoryWrites = directory
        let (inboxNodes, inboxTargets, inboxKinds, inboxStanzas, deliveredIDs) = (nodes, targets, kinds, stanzas, delivered)
        let woken = Array(Set(nodes))
        let noticePayloads = notices
        try await PostgresTransactions.run(client, logger: logger) { connection in
            for (operation, entry) in directoryWrites {
                try await Self.write(operation, entry, connection, logger: logger)
            }
            if !inboxNodes.isEmpty {
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                try await connection.query(
                    """
                    INSERT INTO cluster_inbox (node_id, target, kind, stanza, created_at)
                    SELECT n, t, k, s, \(now) FROM unnest(\(inboxNodes)::text[], \(inboxTargets)::text[], \(inboxKinds)::int2[], \(inboxStanzas)::text[])
                    WITH ORDINALITY AS x(n, t, k, s, o) ORDER BY o
                    """, logger: logger
                ).collect()
                _ = try await connection.query(
                    "SELECT pg_notify('parley_cluster', 'i|' || n) FROM unnest(\(woken)::text[]) AS n", logger: logger
                ).collect()
            }
            if !noticePayloads.isEmpty {
                _ = try await connection.query(
                    "SELECT pg_notify('parley_cluster', p) FROM unnest(\(noticePayloads)::text[]) WITH ORDINALITY AS x(p, o) ORDER BY o",
                    logger: logger
                ).collect()
            }
            if !deliveredIDs.isEmpty {
                _ = try await connection.query("DELETE FROM cluster_inbox WHERE id = ANY(\(deliveredIDs))", logger: logger).collect()
            }
            for member in memberWrites {
                try await ClusterRooms.write(member, connection, logger: logger)
            }
        }
    }

    private static func write(_ operation: Operation, _ entry: SessionEntry, _ connection: PostgresConnection, logger: Logger) async throws {
        let tail = ClusterNotice.sessionPayloadTail(entry)
        let available = entry.view.isAvailable
        let priority = Int16(entry.view.priority)
        let flags = entry.view.flags.rawValue
        switch operation {
        case .bind:
            _ = try await connection.query(
                """
                WITH s AS (
                    INSERT INTO cluster_sessions (jid, node_id, session_id, account_id, version, available, priority, flags, notify, presence)
                    VALUES (\(entry.jid), \(entry.node), \(entry.sessionID), \(entry.accountID), nextval('cluster_session_versions'),
                        \(available), \(priority), \(flags), \(entry.notifyText), \(entry.presenceText))
                    ON CONFLICT (jid) DO UPDATE SET node_id = EXCLUDED.node_id, session_id = EXCLUDED.session_id,
                        account_id = EXCLUDED.account_id, version = EXCLUDED.version, available = EXCLUDED.available,
                        priority = EXCLUDED.priority, flags = EXCLUDED.flags, notify = EXCLUDED.notify, presence = EXCLUDED.presence
                    RETURNING version)
                SELECT pg_notify('parley_cluster', 's|' || version || '|' || \(tail)) FROM s
                """, logger: logger
            ).collect()
        case .update:
            _ = try await connection.query(
                """
                WITH s AS (
                    UPDATE cluster_sessions SET version = nextval('cluster_session_versions'), available = \(available),
                        priority = \(priority), flags = \(flags), notify = \(entry.notifyText), presence = \(entry.presenceText)
                    WHERE jid = \(entry.jid) AND node_id = \(entry.node) AND session_id = \(entry.sessionID)
                    RETURNING version)
                SELECT pg_notify('parley_cluster', 's|' || version || '|' || \(tail)) FROM s
                """, logger: logger
            ).collect()
        case .end, .move:
            let kind = if case .move = operation { "m" } else { "e" }
            let payload = "\(kind)|\(entry.node)|\(entry.sessionID)|\(entry.jid)"
            _ = try await connection.query(
                """
                WITH d AS (
                    DELETE FROM cluster_sessions WHERE jid = \(entry.jid) AND node_id = \(entry.node) AND session_id = \(entry.sessionID)
                    RETURNING jid)
                SELECT pg_notify('parley_cluster', \(payload)) FROM d
                """, logger: logger
            ).collect()
        case .inbox, .delivered, .notice, .roomMember, .marker:
            return
        }
    }
}

/// What an inbox row asks of the receiving node.
enum InboxKind: Int16, Sendable {
    /// A stanza for the session at `target`.
    case stanza = 0
    /// End the session at `target`: a login on another node replaced it. `stanza` holds the
    /// stream error's condition, a newline, and its text.
    case terminate = 1
    /// A stanza for a room (`target`, its bare JID) this node holds, `from` its sender.
    case room = 2
    /// Hand over a resumable session (XEP-0198) to the node whose client resumes it:
    /// `stanza` holds `ResumeRequest`'s lines. `target` is the account's bare JID.
    case resumeRequest = 3
    /// The answer to a `resumeRequest`: `target` is the request's id, `stanza` the
    /// `SessionTransfer` as XML, or empty if the node does not hold the session.
    case resumeReply = 4
}

enum PostgresTransactions {
    /// One transaction; postgres-nio's wrapper error is taken off what the body threw.
    static func run<T: Sendable>(
        _ client: PostgresClient, logger: Logger, _ body: @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        do {
            return try await client.withTransaction(logger: logger) { connection in try await body(connection) }
        } catch let error as PostgresTransactionError {
            if let thrown = error.closureError, error.rollbackError == nil, error.commitError == nil { throw thrown }
            throw error
        }
    }
}
