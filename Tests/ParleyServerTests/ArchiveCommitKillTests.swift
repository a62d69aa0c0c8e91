import Foundation
import ParleyCore
import ParleyStorage
import ParleyTLS
import Testing

/// Durability of the archive's group commit, with a real `parleyd` as shipped (archive and
/// XEP-0198 on): the server is killed with SIGKILL while an archive transaction has written
/// its rows but not committed them (`FaultInjection`). Everything the server acknowledged
/// before must be in the database afterwards; what the stalled transaction held must not have
/// been acknowledged.
@Suite(.serialized) struct ArchiveCommitKillTests {
    @Test(.enabled(if: ParleydKillable.executable != nil, "parleyd is built next to the tests"))
    func aServerKilledBetweenABatchWriteAndItsCommitLosesNothingItAcknowledged() async throws {
        let parleyd = try ParleydKillable()
        try parleyd.addUser("alice", password: "alice-password")
        try parleyd.addUser("bob", password: "bob-password")
        let marker = parleyd.directory + "/stalled"
        // Archive transactions 1 and 2 commit (one message each, below); the third stops
        // between its write and its commit.
        try await parleyd.start(environment: ["PARLEY_FAULT_STALL_ARCHIVE_COMMIT": "3:\(marker)"])
        let fingerprint = try CertificateFingerprint.sha256(pemFile: parleyd.directory + "/data/tls/localhost.crt")

        let bob = try await TestClient.connect(port: parleyd.port, fingerprint: fingerprint)
        _ = try await bob.login("bob", password: "bob-password", resource: "b")
        let alice = try await TestClient.connect(port: parleyd.port, fingerprint: fingerprint)
        _ = try await alice.login("alice", password: "alice-password", resource: "a")
        try await alice.enableStreamManagement(resume: false)

        func message(_ id: String) -> String {
            "<message to='bob@localhost/b' type='chat' id='\(id)'><body>\(id)</body></message>"
        }
        var acknowledged: [String] = []
        for id in ["m1", "m2"] {
            try await alice.send(message(id))
            // `<a/>` only once the message's archive rows are committed.
            let h = try await alice.requestAcknowledgement()
            #expect(h == UInt32(acknowledged.count + 1))
            acknowledged.append(id)
        }
        // m3 lands in the stalled transaction; m4 and m5 queue behind it.
        for id in ["m3", "m4", "m5"] { try await alice.send(message(id)) }
        try await alice.send("<r xmlns='urn:xmpp:sm:3'/>")
        let deadline = ContinuousClock.now + .seconds(20)
        while !FileManager.default.fileExists(atPath: marker), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(FileManager.default.fileExists(atPath: marker), "the third archive transaction reached its commit")
        // Bob already has m3 (delivery does not wait for the archive), but nothing may tell
        // Alice it is stored: her `<r/>` stays unanswered, and Bob's receipt (XEP-0184) for
        // m3 waits for the commit too.
        var received: [String] = []
        while !received.contains("m3") { received.append(try await bob.expect("message").id ?? "") }
        #expect(received == ["m1", "m2", "m3"])
        try await bob.send("<message to='alice@localhost/a' id='r3'><received xmlns='urn:xmpp:receipts' id='m3'/></message>")
        try await alice.expectSilence(for: .milliseconds(800))
        parleyd.kill()
        await alice.close()
        await bob.close()

        let storage = try SQLiteStorage(path: parleyd.databasePath)
        let archived = try await storage.queryArchive(user: "alice", ArchiveQuery(max: 50)).messages.compactMap(\.messageID)
        #expect(Set(acknowledged).isSubset(of: Set(archived)), "acknowledged \(acknowledged), archived after the kill \(archived)")
        // The kill really fell between the write and the commit of m3's batch.
        #expect(archived == ["m1", "m2"])
    }
}
