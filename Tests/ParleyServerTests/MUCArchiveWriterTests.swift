import Foundation
import Logging
import ParleyCore
import ParleyStorage
import Testing

@testable import ParleyMUC

/// The room archive's writer thread: everything queued is written in order by the time
/// `flush()` returns, whichever threads queued it, and a thread that ended when idle is
/// started again by the next message.
@Suite struct MUCArchiveWriterTests {
    static let service = "conference.localhost"

    static func withWriter(idleExit: TimeInterval = 10, _ body: (MUCArchiveWriter, SQLiteStorage) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "parley-mucwriter-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storage = try SQLiteStorage(path: directory + "/parley.sqlite")
        let writer = MUCArchiveWriter(store: storage, service: service, maxPerRoom: nil, logger: Logger(label: "test"), idleExit: idleExit)
        try await body(writer, storage)
    }

    static func pending(_ room: String, _ id: String) -> MUCArchiveWriter.Pending {
        var message = XMLElement(
            "message", namespace: "jabber:client",
            ["from": "\(room)@\(service)/nick", "to": "someone@localhost/phone", "type": "groupchat"])
        message.append(XMLElement("body", namespace: "jabber:client", text: id))
        let entry = MUCArchiveEntry(
            service: service, room: room, stanzaID: id, nick: "nick", senderUsername: nil, senderJID: "someone@elsewhere.example",
            stanza: "", archivedAt: Date())
        return MUCArchiveWriter.Pending(entry: entry, message: message)
    }

    static func ids(_ storage: SQLiteStorage, _ room: String) async throws -> [String] {
        try await storage.queryMUCArchive(service: service, room: room, MUCArchiveQuery(max: 1000)).messages.map(\.stanzaID)
    }

    @Test func flushReturnsOnceEverythingQueuedFromManyThreadsIsWrittenInEachThreadsOrder() async throws {
        try await Self.withWriter { (writer: MUCArchiveWriter, storage: SQLiteStorage) async throws in
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                for index in 0..<50 { writer.enqueue(.append([Self.pending("room\(thread)", "m\(index)")])) }
            }
            await writer.flush()
            for thread in 0..<4 {
                #expect(try await Self.ids(storage, "room\(thread)") == (0..<50).map { "m\($0)" })
            }
            // The stored text is the message without its `to`, as each occupant got it.
            let stored = try await storage.queryMUCArchive(service: Self.service, room: "room0", MUCArchiveQuery(max: 1)).messages
            #expect(stored.first.map { !$0.stanza.contains("someone@localhost") && $0.stanza.contains("<body>m0</body>") } == true)
        }
    }

    @Test func aDeletionComesAfterTheMessagesBeforeItAndBeforeTheOnesAfter() async throws {
        try await Self.withWriter { (writer: MUCArchiveWriter, storage: SQLiteStorage) async throws in
            writer.enqueue(.append([Self.pending("hall", "old1"), Self.pending("hall", "old2")]))
            writer.enqueue(.delete(room: "hall"))
            writer.enqueue(.append([Self.pending("hall", "new1")]))
            await writer.flush()
            #expect(try await Self.ids(storage, "hall") == ["new1"])
        }
    }

    @Test func anIdleThreadEndsAndTheNextMessageStartsAnother() async throws {
        try await Self.withWriter(idleExit: 0.05) { (writer: MUCArchiveWriter, storage: SQLiteStorage) async throws in
            writer.enqueue(.append([Self.pending("hall", "a")]))
            await writer.flush()
            #expect(writer.threadsStarted == 1)
            try await Task.sleep(for: .milliseconds(400))
            writer.enqueue(.append([Self.pending("hall", "b")]))
            await writer.flush()
            #expect(writer.threadsStarted == 2)
            #expect(try await Self.ids(storage, "hall") == ["a", "b"])
            // With nothing queued, flush returns at once.
            await writer.flush()
        }
    }
}
