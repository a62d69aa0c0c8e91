import Foundation
import Logging
import NIOConcurrencyHelpers
import ParleyCore
import ParleyPostgres
import ParleyServer
import PostgresNIO

/// One node of a cluster of `parleyd` processes sharing a PostgreSQL database: its lease
/// (`ClusterLease`), its part of the session directory and its copy of the others'
/// (`ClusterDirectory`), and its inbox (`ClusterWriter` writes to other nodes', `ClusterInbox`
/// reads its own). Everything nodes tell each other goes through one LISTEN channel.
public final class ClusterNode: ClusterMember {
    public struct Settings: Sendable {
        public var nodeID: String
        public var heartbeatInterval: Duration
        public var leaseTimeout: Duration
        public init(nodeID: String, heartbeatInterval: Duration = .seconds(1), leaseTimeout: Duration = .seconds(5)) {
            self.nodeID = nodeID
            self.heartbeatInterval = heartbeatInterval
            self.leaseTimeout = leaseTimeout
        }
    }

    private struct Parts: Sendable {
        let host: ClusterHost
        let directory: ClusterDirectory
        let inbox: ClusterInbox
        let rooms: ClusterRooms
        let lease: ClusterLease
        let incarnation: Int64
    }

    public let settings: Settings
    private let client: PostgresClient
    let writer: ClusterWriter
    private let resumption: ClusterResumption
    private let logger: Logger
    private let parts = NIOLockedValueBox<Parts?>(nil)
    private let tasks = NIOLockedValueBox<[Task<Void, Never>]>([])

    public init(settings: Settings, storage: PostgresStorage, logger: Logger) {
        self.settings = settings
        self.client = storage.postgresClient
        self.logger = logger
        writer = ClusterWriter(node: settings.nodeID, client: storage.postgresClient, logger: logger)
        resumption = ClusterResumption(node: settings.nodeID, writer: writer, logger: logger)
    }

    public var nodeID: String { settings.nodeID }

    /// Rooms this node serves, for tests.
    public var roomsHeld: Int { parts.withLockedValue { $0?.rooms.heldHere ?? 0 } }

    /// Sessions on other nodes this node knows of.
    public var remoteSessionCount: Int { parts.withLockedValue { $0?.directory.count ?? 0 } }

    // MARK: ClusterMember

    public func start(_ host: ClusterHost) async throws {
        let lease = ClusterLease(node: nodeID, client: client, domain: host.domain, timeout: settings.leaseTimeout, logger: logger)
        let incarnation = try await lease.join()
        let directory = ClusterDirectory(node: nodeID, host: host, link: self)
        let rooms = ClusterRooms(node: nodeID, client: client, writer: writer, host: host, logger: logger)
        let inbox = ClusterInbox(
            node: nodeID, client: client, host: host, writer: writer, resumption: resumption, logger: logger, rooms: rooms
        )
        let parts = Parts(host: host, directory: directory, inbox: inbox, rooms: rooms, lease: lease, incarnation: incarnation)
        rooms.attachServices()
        let writer = writer
        let node = nodeID
        host.blocking?.observeListChanges { user in writer.enqueue(.notice("b|\(node)|\(user)")) }
        host.offline?.observeStores { account in
            if let user = account.localpart { writer.enqueue(.notice("o|\(user)")) }
        }
        self.parts.withLockedValue { $0 = parts }
        // Listening before the node serves anyone, so it misses no change of the directory.
        let (listening, ready) = AsyncStream.makeStream(of: Void.self)
        let listener = Task { await self.listen(parts, ready: ready) }
        for await _ in listening { break }
        let heartbeat = Task { await self.beat(parts) }
        tasks.withLockedValue { $0 = [listener, heartbeat] }
        logger.info("joined the cluster", metadata: ["node": "\(nodeID)", "remote_sessions": "\(directory.count)"])
    }

    public func stop() async {
        await writer.waitUntilIdle()
        for task in tasks.withLockedValue({ $0 }) { task.cancel() }
        guard let parts = parts.withLockedValue({ $0 }) else { return }
        do {
            try await parts.lease.leave()
            logger.info("left the cluster", metadata: ["node": "\(nodeID)"])
        } catch {
            logger.error("cannot leave the cluster; the others will take this node over when its lease runs out",
                metadata: ["error": "\(String(reflecting: error))"])
        }
        parts.directory.clear()
    }

    /// Stops beating and listening without leaving, as a killed process would: the others
    /// take this node over when its lease runs out (tests of a node's death in one process).
    public func halt() {
        for task in tasks.withLockedValue({ $0 }) { task.cancel() }
    }

    // MARK: ClusterLink

    public func localSessionBound(_ session: SessionHandle) { writer.enqueue(.bind(session)) }
    public func localSessionChanged(_ session: SessionHandle) { writer.enqueue(.update(session)) }
    public func localSessionEnded(_ session: SessionHandle) { writer.enqueue(.end(session)) }

    public func localSessionMoved(_ session: SessionHandle) { writer.enqueue(.move(session)) }

    public func forward(_ stanza: XMLElement, to session: SessionHandle) -> Task<Void, Never> {
        guard let node = session.node else { return Task {} }
        let (committed, done) = AsyncStream.makeStream(of: Void.self)
        writer.enqueue(
            .inbox(node: node, target: session.jidString, kind: .stanza, stanza: StoredStanza.serialize(stanza)) { done.finish() })
        return Task { for await _ in committed {} }
    }

    public func terminate(_ session: SessionHandle, _ error: StreamError) {
        guard let node = session.node else { return }
        writer.enqueue(
            .inbox(node: node, target: session.jidString, kind: .terminate, stanza: error.condition.rawValue + "\n" + (error.text ?? ""), done: nil))
    }

    public func takeOverSession(previd: String, user: String, accountID: Int64?, from nodes: [String]) async -> SessionTransfer? {
        guard let host = parts.withLockedValue({ $0?.host }) else { return nil }
        return await resumption.takeOver(previd: previd, user: user, accountID: accountID, domain: host.domain, from: nodes)
    }

    // MARK: Listening

    private func listen(_ parts: Parts, ready: AsyncStream<Void>.Continuation) async {
        var signalled = false
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: ClusterNotice.channel) { notices in
                        // Read after LISTEN took effect: a change committed from now on
                        // arrives as a notice too, and versions keep the newer of the two.
                        parts.directory.resync(try await self.readDirectory())
                        parts.inbox.wake()
                        if !signalled {
                            signalled = true
                            ready.finish()
                        }
                        for try await notice in notices {
                            await self.handle(notice.payload, parts)
                        }
                    }
                }
            } catch {
                if Task.isCancelled { break }
                logger.error("lost the cluster's notification channel; listening again", metadata: ["error": "\(String(reflecting: error))"])
                if !signalled {
                    signalled = true
                    ready.finish()
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    private func handle(_ payload: String, _ parts: Parts) async {
        guard let notice = ClusterNotice.parse(payload) else {
            return logger.warning("unreadable cluster notice", metadata: ["payload": "\(payload.prefix(80))"])
        }
        switch notice {
        case .session(let entry):
            if entry.presenceOmitted {
                if let row = try? await readDirectory(jid: entry.jid).first { parts.directory.apply(row) }
            } else {
                parts.directory.apply(entry)
            }
        case .ended(let node, let sessionID, let jid, let moved):
            parts.directory.ended(node: node, sessionID: sessionID, jid: jid, moved: moved)
        case .nodeGone(let node):
            if node != nodeID {
                parts.directory.nodeGone(node)
                resumption.nodeGone(node)
            }
            parts.rooms.nodeGone(node)
        case .inbox(let node):
            if node == nodeID { parts.inbox.wake() }
        case .blockList(let node, let user):
            if node != nodeID, let blocking = parts.host.blocking {
                await blocking.reloadList(of: user, domain: parts.host.domain)
            }
        case .offline(let user):
            if let account = try? JID(localpart: user, domainpart: parts.host.domain.domainpart) { parts.host.offlineStored(account) }
        }
    }

    private func readDirectory(jid: String? = nil) async throws -> [SessionEntry] {
        let logger = logger
        let node = nodeID
        let rows = try await client.withConnection { connection in
            if let jid {
                return try await connection.query(
                    """
                    SELECT jid, node_id, session_id, account_id, version, available, priority, flags, notify, presence
                    FROM cluster_sessions WHERE jid = \(jid)
                    """, logger: logger
                ).collect()
            }
            return try await connection.query(
                """
                SELECT jid, node_id, session_id, account_id, version, available, priority, flags, notify, presence
                FROM cluster_sessions WHERE node_id <> \(node)
                """, logger: logger
            ).collect()
        }
        return try rows.map { row in
            let (jid, node, sessionID, accountID, version, available, priority, flags, notify, presence) = try row.decode(
                (String, String, Int64, Int64?, Int64, Bool, Int16, Int32, String, String?).self)
            return SessionEntry(
                jid: jid, node: node, sessionID: sessionID, accountID: accountID, version: version, available: available,
                priority: Int8(clamping: priority), flags: flags, notify: notify, presenceText: presence)
        }
    }

    // MARK: Heartbeat

    private func beat(_ parts: Parts) async {
        var incarnation = parts.incarnation
        while !Task.isCancelled {
            try? await Task.sleep(for: settings.heartbeatInterval)
            if Task.isCancelled { break }
            do {
                if try await !parts.lease.renew(incarnation: incarnation) {
                    // Taken for dead (a pause longer than the lease): the others have moved this
                    // node's inbox offline and dropped its sessions, so they must reconnect.
                    logger.critical("this node's lease was taken over; ending its sessions and joining again", metadata: ["node": "\(nodeID)"])
                    parts.rooms.nodeGone(nodeID)
                    for session in parts.host.sessions.localSessions {
                        session.terminate(StreamError(.reset, text: "The server lost its place in the cluster; connect again."))
                    }
                    incarnation = try await parts.lease.join()
                }
                let reaped = try await parts.lease.reapExpired { parts.directory.sessions(on: $0) }
                parts.rooms.adoptTaken(reaped.rooms)
                // This node won the takeover, so it alone says the dead node's sessions are gone.
                for (_, sessions) in reaped.nodes where !sessions.isEmpty { parts.host.sessionsLost(sessions) }
                // A safety net for a wake-up lost while the channel was being re-established.
                parts.inbox.wake()
            } catch {
                logger.error("cluster heartbeat failed", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }
}

extension ClusterNode {
    /// A node as `cluster` in the server's configuration describes it.
    public convenience init(_ configuration: ServerConfiguration, storage: PostgresStorage, logger: Logger) {
        self.init(
            settings: Settings(
                nodeID: configuration.clusterNodeID, heartbeatInterval: configuration.cluster.heartbeatInterval,
                leaseTimeout: configuration.cluster.leaseTimeout),
            storage: storage, logger: logger)
    }
}
