import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ParleyCore
import ParleyServer
import PostgresNIO

/// The receiving end of this node's inbox: stanzas other nodes wrote for its sessions. A
/// wake-up (NOTIFY) makes it claim what is waiting, oldest first, and hand each stanza to its
/// session. A message's row is deleted once the session's client has it (written, or with
/// XEP-0198 acknowledged); if the session ends first, the message goes on like any message
/// to the account (another resource, or offline storage) and the row is deleted once that
/// is committed. Rows stay claimed meanwhile so no wake-up takes them twice. If this node
/// dies, whatever is left (claimed or not) goes to offline storage (`ClusterLease`).
final class ClusterInbox: Sendable {
    private struct Row: Sendable {
        let id: Int64
        let target: String
        let kind: Int16
        let stanza: String
    }

    let node: String
    private let client: PostgresClient
    private let host: ClusterHost
    private let writer: ClusterWriter
    private let resumption: ClusterResumption
    private let logger: Logger
    /// Where stanzas other nodes forwarded to rooms held here go.
    private let rooms: ClusterRooms?
    /// (draining, woken again meanwhile)
    private let state = NIOLockedValueBox((running: false, again: false))
    static let batchLimit = 500

    init(
        node: String, client: PostgresClient, host: ClusterHost, writer: ClusterWriter, resumption: ClusterResumption,
        logger: Logger, rooms: ClusterRooms? = nil
    ) {
        self.resumption = resumption
        self.rooms = rooms
        self.node = node
        self.client = client
        self.host = host
        self.writer = writer
        self.logger = logger
    }

    func wake() {
        let start = state.withLockedValue { state -> Bool in
            if state.running {
                state.again = true
                return false
            }
            state.running = true
            return true
        }
        if start { Task.detached { await self.drain() } }
    }

    private func drain() async {
        while true {
            state.withLockedValue { $0.again = false }
            var claimed = ClusterInbox.batchLimit
            while claimed == ClusterInbox.batchLimit {
                do {
                    let rows = try await claim()
                    claimed = rows.count
                    deliver(rows)
                } catch {
                    logger.error("cannot read the cluster inbox", metadata: ["error": "\(String(reflecting: error))"])
                    break
                }
            }
            let done = state.withLockedValue { state -> Bool in
                if state.again { return false }
                state.running = false
                return true
            }
            if done { return }
        }
    }

    private func claim() async throws -> [Row] {
        let node = node
        let logger = logger
        let limit = Int64(Self.batchLimit)
        let rows = try await client.withConnection { connection in
            try await connection.query(
                """
                UPDATE cluster_inbox SET claimed = true WHERE id IN (
                    SELECT id FROM cluster_inbox WHERE node_id = \(node) AND NOT claimed ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING id, target, kind, stanza
                """, logger: logger
            ).collect()
        }
        return try rows.map { row in
            let (id, target, kind, stanza) = try row.decode((Int64, String, Int16, String).self)
            return Row(id: id, target: target, kind: kind, stanza: stanza)
        }.sorted { $0.id < $1.id }
    }

    private func deliver(_ rows: [Row]) {
        guard !rows.isEmpty else { return }
        // Only stanza and room rows hold a stanza; the others' text is read as it is.
        let parsed: Set<Int16> = [InboxKind.stanza.rawValue, InboxKind.room.rawValue]
        let stanzas = StoredStanza.parseAll(rows.map { parsed.contains($0.kind) ? $0.stanza : "" })
        var done: [Int64] = []
        for (row, stanza) in zip(rows, stanzas) {
            let target = try? JID(row.target)
            let session = target.flatMap { host.sessions.session($0) }.flatMap { $0.isRemote ? nil : $0 }
            if row.kind == InboxKind.resumeRequest.rawValue {
                resumption.handle(row.stanza, host: host)
                done.append(row.id)
                continue
            }
            if row.kind == InboxKind.resumeReply.rawValue {
                resumption.answered(row.target, row.stanza, host: host)
                done.append(row.id)
                continue
            }
            if row.kind == InboxKind.terminate.rawValue {
                let parts = row.stanza.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
                let condition = StreamErrorCondition(rawValue: String(parts[0])) ?? .conflict
                session?.terminate(StreamError(condition, text: parts.count > 1 ? String(parts[1]) : nil))
                done.append(row.id)
                continue
            }
            if row.kind == InboxKind.room.rawValue, let stanza, let rooms {
                rooms.receiveForwarded(stanza, row: row.id)
                continue
            }
            guard let stanza, let target else {
                logger.error("unreadable stanza in the cluster inbox dropped", metadata: ["id": "\(row.id)"])
                done.append(row.id)
                continue
            }
            guard stanza.name == "message" else {
                if let session {
                    session.deliver(stanza)
                } else if stanza.name == "iq", stanza.type == "get" || stanza.type == "set",
                    let from = stanza.from.flatMap({ try? JID($0) }), let reply = stanza.errorReply(StanzaError(.serviceUnavailable))
                {
                    host.sessions.session(from)?.deliver(reply)
                }
                done.append(row.id)
                continue
            }
            let id = row.id
            guard let session else {
                redeliver(stanza, account: target.bare, row: id)
                continue
            }
            let written = host.eventLoop.makePromise(of: Void.self)
            session.deliver(stanza, written: written)
            written.futureResult.whenComplete { [self] result in
                switch result {
                case .success: writer.enqueue(.delivered([id]))
                case .failure: redeliver(stanza, account: target.bare, row: id)
                }
            }
        }
        if !done.isEmpty { writer.enqueue(.delivered(done)) }
    }

    /// A message whose session is gone: on to the account's other resources or offline,
    /// and the row deleted once that is safe.
    private func redeliver(_ message: XMLElement, account: JID, row: Int64) {
        let work = host.router.redeliver(message, account: account)
        let writer = writer
        guard let work else { return writer.enqueue(.delivered([row])) }
        Task {
            await work.value
            writer.enqueue(.delivered([row]))
        }
    }
}
