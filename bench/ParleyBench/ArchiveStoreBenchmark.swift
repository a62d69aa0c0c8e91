import Foundation
import GRDB
import ParleyCore
import ParleyServer
import ParleyStorage

#if canImport(Glibc)
import Glibc
#endif

/// The SQLite archive's write path alone, in this process: `SQLiteStorage.archive` given the
/// batches the archive writer gives it (two entries per message between local accounts, one
/// shared text, time-ordered stanza-ids, the trim to the per-user limit every 32nd batch),
/// on a fresh file on disk for each run. The CPU per message is this process's (the calling
/// thread, GRDB's writer and SQLite): the server's archive cost without the sockets, the
/// event loops and the load generator, so two builds compare in a few seconds (bench/README.md,
/// issue 17). Entries are made before the clock starts.
enum ArchiveStoreBenchmark: Benchmark {
    static let name = "archive"
    static let summary = "SQLiteStorage.archive alone: CPU per archived message, batches as the writer makes them"

    static func run(arguments: [String]) throws {
        let options = try BenchOptions(arguments, valueOptions: ["--messages", "--batch", "--pairs", "--runs", "--dir", "--max-per-user", "--sql"], flagOptions: ["--origin-ids"])
        let messages = try options.int("--messages", default: 40_000)
        let batch = max(1, try options.int("--batch", default: 2_048))
        let pairs = max(1, try options.int("--pairs", default: 50))
        let runs = max(1, try options.int("--runs", default: 3))
        let maxPerUser = try options.int("--max-per-user", default: 10_000)
        let parent = try options.string("--dir", default: "/var/tmp")
        // Run on each fresh file after its migrations: a schema experiment (an index dropped,
        // a pragma) measured without a build of the server.
        let setupSQL = try options.string("--sql", default: "")
        // Real clients (Conversations, Dino, Gajim, Monal) put an XEP-0359 origin-id, a random
        // UUID, on every message they send.
        let entries = makeEntries(messages: messages, pairs: pairs, originIDs: options.flag("--origin-ids"))
        // Sliced before the clock starts: the writer hands its batches on without a copy.
        let batches = stride(from: 0, to: entries.count, by: 2 * batch).map { Array(entries[$0..<min($0 + 2 * batch, entries.count)]) }
        print("archive: \(messages) messages (\(entries.count) entries), \(batch) messages per batch, \(pairs) pairs, \(runs) runs\(options.flag("--origin-ids") ? ", origin-ids" : "")")
        var perMessage: [Double] = []
        for run in 1...runs {
            let directory = parent + "/parley-archive-bench-\(getpid())-\(run)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let storage = try SQLiteStorage(path: directory + "/parley.sqlite")
            if !setupSQL.isEmpty {
                try DatabaseQueue(path: directory + "/parley.sqlite").write { try $0.execute(sql: setupSQL) }
            }
            let keys = try AccountKeys.derive(password: "benchpass", iterations: 4096)
            let (cpu, wall) = try blocking {
                for index in 1...(2 * pairs) { try await storage.createAccount(username: "user\(index)", keys: keys) }
                let cpuStart = ProcessCPU.seconds()
                let wallStart = ContinuousClock.now
                for (index, entries) in batches.enumerated() {
                    // As ArchiveWriter: the per-user trim rides on one batch in 32.
                    let trim = (index + 1) % 32 == 0 && maxPerUser > 0 ? maxPerUser : nil
                    try await storage.archive(entries, maxPerUser: trim)
                }
                let elapsed = ContinuousClock.now - wallStart
                return (ProcessCPU.seconds() - cpuStart, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            }
            let microseconds = cpu / Double(messages) * 1e6
            perMessage.append(microseconds)
            print(String(format: "run %d: %.2f µs of CPU per message, %.0f messages/s", run, microseconds, Double(messages) / wall))
        }
        let sorted = perMessage.sorted()
        print(String(format: "RESULT archive messages=%d batch=%d cpu_us_best=%.2f cpu_us_median=%.2f", messages, batch, sorted[0], sorted[sorted.count / 2]))
    }

    /// What `ArchiveModule.stamp` queues for a chat message between user(2k-1) and user(2k):
    /// one entry for each party, the same text and ids.
    private static func makeEntries(messages: Int, pairs: Int, originIDs: Bool) -> [ArchiveEntry] {
        var entries: [ArchiveEntry] = []
        entries.reserveCapacity(2 * messages)
        let start = Date()
        for index in 0..<messages {
            let pair = index % pairs
            let (sender, recipient) = index / pairs % 2 == 0 ? (2 * pair + 1, 2 * pair + 2) : (2 * pair + 2, 2 * pair + 1)
            let from = "user\(sender)@localhost/bench"
            let to = "user\(recipient)@localhost/bench"
            let stanza = "<message xmlns='jabber:client' from='\(from)' to='\(to)' type='chat' id='m\(index)'><body>\(index) \(String(repeating: "x", count: 70))</body></message>"
            let at = start.addingTimeInterval(Double(index) / 10_000)
            let id = TimeOrderedUUID.make(now: at)
            let originID = originIDs ? UUID().uuidString.lowercased() : nil
            // One body for both archives, as ArchiveModule makes them.
            let body = ArchiveEntry.Body(
                from: from, to: to, stanzaID: id, originID: originID, messageID: "m\(index)", messageType: "chat", stanza: stanza,
                archivedAt: at)
            for (owner, with) in [("user\(sender)", "user\(recipient)@localhost"), ("user\(recipient)", "user\(sender)@localhost")] {
                entries.append(ArchiveEntry(owner: owner, with: with, body: body))
            }
        }
        return entries
    }
}
