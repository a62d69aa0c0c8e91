import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import ParleyHTTP

@Suite("XEP-0363 upload lifecycle")
struct UploadLifecycleTests {
    @Test func expiredFilesAreDeleted() async throws {
        let harness = try await UploadHarness { $0.expiryDays = 2 }
        let bytes = UploadHarness.bytes(100)
        let slot = try await harness.slot(size: bytes.count)
        #expect(try await harness.put(slot, bytes).status == 201)
        let maintenance = try #require(harness.server.uploads)
        #expect(try await maintenance.expire(olderThan: 2, now: Date().addingTimeInterval(86_400)) == 0)
        #expect(try await harness.send(.GET, slot.getURL).status == 200)

        #expect(try await maintenance.expire(olderThan: 2, now: Date().addingTimeInterval(3 * 86_400)) == 1)
        #expect(try await harness.send(.GET, slot.getURL).status == 404)
        let files = try FileManager.default.contentsOfDirectory(atPath: harness.uploadDirectory + "/1")
        #expect(files.isEmpty)
        try await harness.stop()
    }

    @Test func adminDeleteRemovesOneOrAllFiles() async throws {
        let harness = try await UploadHarness()
        let maintenance = try #require(harness.server.uploads)
        var slots: [UploadSlot] = []
        for name in ["a.png", "b.png"] {
            let slot = try await harness.slot(name: name, size: 10)
            #expect(try await harness.put(slot, UploadHarness.bytes(10)).status == 201)
            slots.append(slot)
        }
        #expect(try await maintenance.list(owner: "alice").map(\.filename) == ["a.png", "b.png"])
        #expect(try await maintenance.delete(owner: "alice", file: "a.png").count == 1)
        #expect(try await harness.send(.GET, slots[0].getURL).status == 404)
        #expect(try await harness.send(.GET, slots[1].getURL).status == 200)
        #expect(try await maintenance.delete(owner: "alice").count == 1)
        #expect(try await maintenance.list(owner: "alice").isEmpty)
        #expect(try await harness.send(.GET, slots[1].getURL).status == 404)
        try await harness.stop()
    }

    @Test func deletingTheAccountDeletesItsFiles() async throws {
        let harness = try await UploadHarness()
        let slot = try await harness.slot(size: 10)
        #expect(try await harness.put(slot, UploadHarness.bytes(10)).status == 201)
        let bobs = try await harness.slot("bob", size: 10)
        #expect(try await harness.put(bobs, UploadHarness.bytes(10)).status == 201)
        let folder = harness.uploadDirectory + "/1"
        #expect(FileManager.default.fileExists(atPath: folder))

        #expect(try await harness.storage.deleteAccount(username: "alice", origin: .inband))
        #expect(try await harness.send(.GET, slot.getURL).status == 404)
        // The maintenance task reads the deletion from the change feed (every 100 ms here).
        for _ in 0..<50 where FileManager.default.fileExists(atPath: folder) {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(!FileManager.default.fileExists(atPath: folder))
        #expect(try await harness.send(.GET, bobs.getURL).status == 200)
        try await harness.stop()
    }

    @Test func gracefulShutdownLetsAnUploadInFlightFinish() async throws {
        let harness = try await UploadHarness(gracePeriod: .seconds(20))
        let size = 40 * 16 * 1024
        let slot = try await harness.slot(name: "slow.bin", size: size, type: "application/octet-stream")
        // About 2 s of upload, in 40 pieces.
        let upload = Task {
            try await harness.send(
                .PUT, slot.putURL, headers: [("Content-Type", "application/octet-stream")],
                body: .stream(GeneratedBody(count: size, chunk: 16 * 1024, pause: .milliseconds(50)), length: .known(Int64(size))))
        }
        // In flight means the server is writing it: a connection that has not sent its request
        // yet is idle, and a shutdown rightly closes it (under a loaded CI, 500 ms was not enough).
        let deadline = ContinuousClock.now + .seconds(20)
        while GatedBody.sizeOfOpenFile(under: harness.uploadDirectory + "/1") < 2 * 16 * 1024 {
            guard ContinuousClock.now < deadline else { throw GatedBody.NotStreamed(description: "the upload never reached the server's file") }
            try await Task.sleep(for: .milliseconds(20))
        }
        let shutdownStarted = ContinuousClock.now
        await harness.group.triggerGracefulShutdown()
        let reply = try await upload.value
        #expect(reply.status == 201)
        #expect(ContinuousClock.now - shutdownStarted > .milliseconds(500))
        let stored = try Data(contentsOf: URL(fileURLWithPath: harness.uploadDirectory + "/1/" + slot.id))
        #expect(stored.count == size)
        try await harness.stop()
    }

    @Test func theGracePeriodBoundsTheWait() async throws {
        let harness = try await UploadHarness(gracePeriod: .milliseconds(300))
        let size = 100 * 16 * 1024
        let slot = try await harness.slot(name: "slower.bin", size: size, type: "application/octet-stream")
        let upload = Task {
            try await harness.send(
                .PUT, slot.putURL, headers: [("Content-Type", "application/octet-stream")],
                body: .stream(GeneratedBody(count: size, chunk: 16 * 1024, pause: .milliseconds(100)), length: .known(Int64(size))))
        }
        try await Task.sleep(for: .milliseconds(300))
        let started = ContinuousClock.now
        try await harness.stop()
        #expect(ContinuousClock.now - started < .seconds(5))
        // The client would wait for an answer until its own timeout (a minute and more): the
        // server's part is done, so the test stops waiting for it.
        upload.cancel()
        #expect((try? await upload.value)?.status != 201)
        #expect(!FileManager.default.fileExists(atPath: harness.uploadDirectory + "/1/" + slot.id))
    }

    /// 100 MB streamed from a generator through the server to disk. The generator stops at
    /// each quarter until the file the server writes holds all but 8 MB of what was sent: a
    /// server that held the body (or more than 8 MB of it) before writing would never let it
    /// go on. (A peak-RSS bound said the same, but other tests running in this process made
    /// it flaky.)
    @Test func aLargeUploadIsStreamedNotBuffered() async throws {
        let harness = try await UploadHarness()
        let size = 100 * 1024 * 1024
        let slot = try await harness.slot(name: "big.bin", size: size, type: "application/octet-stream")
        let body = GatedBody(count: size, gates: [size / 4, size / 2, 3 * size / 4], slack: 8 << 20, folder: harness.uploadDirectory + "/1")
        let reply = try await harness.send(
            .PUT, slot.putURL, headers: [("Content-Type", "application/octet-stream")],
            body: .stream(body, length: .known(Int64(size))))
        #expect(reply.status == 201)
        let attributes = try FileManager.default.attributesOfItem(atPath: harness.uploadDirectory + "/1/" + slot.id)
        #expect((attributes[.size] as? Int) == size)
        try await harness.stop()
    }
}
