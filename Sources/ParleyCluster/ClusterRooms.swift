import Foundation
import Logging
import NIOConcurrencyHelpers
import ParleyCore
import ParleyServer
import PostgresNIO

/// Where each room of the node's placed services (`PlacedService`: multi-user chat) is
/// served: one node at a time holds a room's lease (`cluster_rooms`), and the others forward
/// its stanzas to that node's inbox, `from` as the sender's node stamped it, in the order
/// they came (one writer per node). The first node that gets a stanza for a room no one holds
/// claims it, loads it from storage and serves it. A lease lasts as long as its node's: the
/// node that takes a dead one over takes its rooms in the same transaction (`ClusterLease`)
/// and loads them at once, with the occupants the dead node recorded
/// (`cluster_room_members`).
///
/// Each node remembers who holds the rooms it has seen; a notice that a node is gone
/// (`x|node`) makes it forget that node's, so the next stanza asks the database again.
final class ClusterRooms: ServicePlacement {
    private struct Waiting: Sendable {
        let stanza: XMLElement
        let sender: JID
        /// The inbox row it came in, deleted once it was served (or sent on).
        let row: Int64?
        let done: (@Sendable () -> Void)?
    }

    private enum Holder {
        case here
        case node(String)
        /// Asking the database; what arrives meanwhile waits, in order.
        case claiming([Waiting])
    }

    private enum Step {
        case serve
        case forward(String)
        case queued
        case claim
    }

    let node: String
    private let client: PostgresClient
    private let writer: ClusterWriter
    private let host: ClusterHost
    private let logger: Logger
    private let services: [String: any PlacedService]
    private let holders = NIOLockedValueBox([String: Holder]())

    init(node: String, client: PostgresClient, writer: ClusterWriter, host: ClusterHost, logger: Logger) {
        self.node = node
        self.client = client
        self.writer = writer
        self.host = host
        self.logger = logger
        var services: [String: any PlacedService] = [:]
        for case let service as any PlacedService in host.hostedServices { services[service.domain] = service }
        self.services = services
    }

    /// Joins the placed services to this placement.
    func attachServices() {
        for service in services.values { service.attach(self) }
    }

    /// Rooms this node holds, for tests.
    var heldHere: Int {
        holders.withLockedValue { holders in
            holders.values.filter { holder in
                if case .here = holder { return true }
                return false
            }.count
        }
    }

    // MARK: ServicePlacement

    func route(_ stanza: XMLElement, from sender: JID, service: String, key: String) -> Task<Void, Never>? {
        guard let placed = services[service] else { return nil }
        let (finished, finish) = AsyncStream.makeStream(of: Void.self)
        let waiting = Waiting(stanza: stanza, sender: sender, row: nil, done: { finish.finish() })
        dispatch(waiting, service: placed, key: key)
        return Task { for await _ in finished {} }
    }

    func record(service: String, key: String, member: JID, data: String?) {
        let memberNode = data == nil ? node : (host.sessions.session(member)?.node ?? node)
        writer.enqueue(.roomMember(service: service, room: key, jid: member.description, node: memberNode, data: data))
    }

    // MARK: Forwarded stanzas

    /// A stanza another node forwarded to a room here (inbox row `row`).
    func receiveForwarded(_ stanza: XMLElement, row: Int64) {
        guard let to = stanza.to.flatMap({ try? JID($0) }), let sender = stanza.from.flatMap({ try? JID($0) }),
            let service = services[to.domainpart], let key = service.placementKey(of: to)
        else {
            logger.error("a forwarded room stanza without a room or sender dropped", metadata: ["id": "\(row)"])
            return writer.enqueue(.delivered([row]))
        }
        dispatch(Waiting(stanza: stanza, sender: sender, row: row, done: nil), service: service, key: key)
    }

    /// Serves, forwards or queues.
    private func dispatch(_ waiting: Waiting, service: any PlacedService, key: String) {
        let id = Self.id(service.domain, key)
        let step = holders.withLockedValue { holders -> Step in
            switch holders[id] {
            case .here?: return .serve
            case .node(let other)?: return .forward(other)
            case .claiming(var queue)?:
                queue.append(waiting)
                holders[id] = .claiming(queue)
                return .queued
            case nil:
                holders[id] = .claiming([waiting])
                return .claim
            }
        }
        switch step {
        case .serve:
            serve(waiting, service)
        case .forward(let other):
            forward(waiting, to: other, service: service, key: key)
        case .queued:
            break
        case .claim:
            Task { await self.claim(service, key) }
        }
    }

    private func serve(_ waiting: Waiting, _ service: any PlacedService) {
        let writer = writer
        guard let row = waiting.row else {
            // A local sender's stanza is safe once the copies for other nodes are committed:
            // its acknowledgement waits for that, as for a message to a remote session.
            return service.serve(waiting.stanza, from: waiting.sender) {
                writer.enqueue(.marker { waiting.done?() })
            }
        }
        writer.hold()
        service.serve(waiting.stanza, from: waiting.sender) {
            writer.enqueue(.delivered([row]))
            writer.release()
        }
    }

    private func forward(_ waiting: Waiting, to other: String, service: any PlacedService, key: String) {
        var stanza = waiting.stanza
        if stanza.from == nil { stanza.setAttribute("from", waiting.sender.description) }
        let target = "\(key)@\(service.domain)"
        writer.hold()
        writer.enqueue(.inbox(node: other, target: target, kind: .room, stanza: StoredStanza.serialize(stanza), done: waiting.done))
        if let row = waiting.row { writer.enqueue(.delivered([row])) }
        writer.release()
    }

    // MARK: Leases

    /// Takes the room if no node holds it, then serves or forwards what waited for the answer.
    private func claim(_ service: any PlacedService, _ key: String) async {
        let id = Self.id(service.domain, key)
        var holder: String?
        var attempt = 0
        while holder == nil {
            do {
                holder = try await claimRow(service: service.domain, room: key)
            } catch {
                attempt += 1
                logger.error("cannot claim a room; trying again", metadata: ["room": "\(key)@\(service.domain)", "error": "\(String(reflecting: error))"])
                try? await Task.sleep(for: .milliseconds(min(100 * attempt, 2000)))
            }
        }
        guard let holder else { return }
        if holder == node {
            let members = (try? await readMembers(service: service.domain, room: key)) ?? []
            await service.adopt(key, members: members)
            logger.info("serving a room", metadata: ["room": "\(key)@\(service.domain)", "members": "\(members.count)"])
        }
        // What waited goes first, in order; only then do new stanzas take the direct way.
        while true {
            let batch = holders.withLockedValue { holders -> [Waiting] in
                guard case .claiming(let queue)? = holders[id] else { return [] }
                if queue.isEmpty {
                    holders[id] = holder == node ? .here : .node(holder)
                    return []
                }
                holders[id] = .claiming([])
                return queue
            }
            if batch.isEmpty { break }
            for waiting in batch {
                if holder == node {
                    serve(waiting, service)
                } else {
                    forward(waiting, to: holder, service: service, key: key)
                }
            }
        }
    }

    /// The room's holder: this node if it got the row, else whichever node has it.
    private func claimRow(service: String, room: String) async throws -> String? {
        let node = node
        let logger = logger
        return try await client.withConnection { connection in
            try await connection.query(
                """
                WITH claimed AS (
                    INSERT INTO cluster_rooms (service, room, node_id) VALUES (\(service), \(room), \(node))
                    ON CONFLICT (service, room) DO NOTHING RETURNING node_id)
                SELECT node_id FROM claimed UNION ALL SELECT node_id FROM cluster_rooms WHERE service = \(service) AND room = \(room)
                """, logger: logger
            ).collect().first?.decode(String.self)
        }
    }

    private func readMembers(service: String, room: String) async throws -> [PlacedMember] {
        let logger = logger
        let rows = try await client.withConnection { connection in
            try await connection.query(
                """
                SELECT m.jid, m.data, EXISTS (SELECT 1 FROM cluster_nodes n WHERE n.node_id = m.node_id)
                FROM cluster_room_members m WHERE m.service = \(service) AND m.room = \(room)
                """, logger: logger
            ).collect()
        }
        return try rows.compactMap { row in
            let (jid, data, nodeAlive) = try row.decode((String, String, Bool).self)
            guard let member = try? JID(jid) else { return nil }
            // A session this node does not know is gone, whatever its node says.
            return PlacedMember(jid: member, data: data, alive: nodeAlive && host.sessions.session(member) != nil)
        }
    }

    /// Rooms a takeover just gave this node: loaded now, so their occupants on the surviving
    /// nodes go on without waiting for a stanza, and those of the dead node are seen to leave.
    func adoptTaken(_ rooms: [(service: String, room: String)]) {
        for (domain, key) in rooms {
            guard let service = services[domain] else { continue }
            let id = Self.id(domain, key)
            let start = holders.withLockedValue { holders -> Bool in
                switch holders[id] {
                case .here?, .claiming?: return false
                case .node?, nil:
                    holders[id] = .claiming([])
                    return true
                }
            }
            if start { Task { await self.claim(service, key) } }
        }
    }

    /// `gone` left the cluster: the rooms it held are asked for again. When it is this node
    /// (taken for dead after a pause), its rooms are someone else's now.
    func nodeGone(_ gone: String) {
        let released = holders.withLockedValue { holders -> [String] in
            var released: [String] = []
            for (id, holder) in holders {
                switch holder {
                case .node(let other) where other == gone:
                    holders[id] = nil
                case .here where gone == node:
                    holders[id] = nil
                    released.append(id)
                default:
                    break
                }
            }
            return released
        }
        for id in released {
            let parts = id.split(separator: "\u{0}", maxSplits: 1).map(String.init)
            guard parts.count == 2, let service = services[parts[0]] else { continue }
            service.release(parts[1])
        }
    }

    private static func id(_ service: String, _ key: String) -> String { service + "\u{0}" + key }

    /// A member row, inside the writer's transaction.
    static func write(
        _ member: (service: String, room: String, jid: String, node: String, data: String?), _ connection: PostgresConnection,
        logger: Logger
    ) async throws {
        if let data = member.data {
            _ = try await connection.query(
                """
                INSERT INTO cluster_room_members (service, room, jid, node_id, data)
                VALUES (\(member.service), \(member.room), \(member.jid), \(member.node), \(data))
                ON CONFLICT (service, room, jid) DO UPDATE SET node_id = EXCLUDED.node_id, data = EXCLUDED.data
                """, logger: logger
            ).collect()
        } else {
            _ = try await connection.query(
                "DELETE FROM cluster_room_members WHERE service = \(member.service) AND room = \(member.room) AND jid = \(member.jid)",
                logger: logger
            ).collect()
        }
    }
}
