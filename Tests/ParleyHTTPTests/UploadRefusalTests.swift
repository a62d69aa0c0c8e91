import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import ParleyHTTP

@Suite("XEP-0363 upload refusals")
struct UploadRefusalTests {
    @Test func aSlotIsSingleUse() async throws {
        let harness = try await UploadHarness()
        let bytes = UploadHarness.bytes(100)
        let slot = try await harness.slot(name: "my photo.png", size: bytes.count)
        #expect(slot.putURL.contains("/my%20photo.png?"))
        #expect(try await harness.put(slot, bytes).status == 201)
        let again = try await harness.put(slot, bytes)
        #expect(again.status == 409)
        #expect(again.text == "This upload slot has already been used\n")
        // The same URL with its path encoded another way is the same slot, used as well.
        let reencoded = slot.putURL.replacingOccurrences(of: "/my%20photo.png?", with: "/my%20photo%2Epng?")
        #expect(try await harness.put(UploadSlot(putURL: reencoded, getURL: slot.getURL, id: slot.id), bytes).status == 409)
        // Still one file, stored once.
        #expect(try await harness.send(.GET, slot.getURL).body == bytes)
        #expect(try await harness.slots.metadata.uploads(of: "alice").map(\.state) == [.stored])
        try await harness.stop()
    }

    /// A slot writes no row; its first PUT does, and a second PUT racing it finds it taken.
    @Test func aSlotIsSingleUseEvenWhileItsFirstPutRuns() async throws {
        let harness = try await UploadHarness()
        let slot = try await harness.slot(size: 4_000)
        #expect(try await harness.slots.metadata.uploads(of: "alice").isEmpty)
        let hold = BodyHold()
        async let slow = harness.send(
            .PUT, slot.putURL, headers: [("Content-Type", "image/png")],
            body: .stream(GeneratedBody(count: 4_000, chunk: 100, hold: hold), length: .known(4_000)))
        // The slow PUT has sent its first 100 bytes and waits for the racing one to be answered.
        let deadline = ContinuousClock.now + .seconds(30)
        while try await harness.slots.metadata.uploads(of: "alice").isEmpty, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try await harness.slots.metadata.uploads(of: "alice").map(\.state) == [.uploading])
        let racing = try await harness.put(slot, UploadHarness.bytes(4_000))
        hold.release()
        #expect(racing.status == 409)
        #expect(racing.text == "This upload slot has already been used\n")
        #expect(try await slow.status == 201)
        #expect(try await harness.send(.GET, slot.getURL).body == [UInt8](repeating: 0x5A, count: 4_000))
        try await harness.stop()
    }

    /// The slot request's quota check counts in memory; the PUT's is exact, in the transaction
    /// that records the upload: it holds for slots the first check let through (the total
    /// quota counts stored files only) and for slots a restarted server no longer knows of.
    @Test func theQuotasAreCheckedAgainWhenTheFileArrives() async throws {
        let total = try await UploadHarness { upload in
            upload.maxFileSize = 1000
            upload.totalQuota = 1500
        }
        let first = try await total.slot(size: 1000)
        let second = try await total.slot(size: 1000)
        #expect(try await total.put(first, UploadHarness.bytes(1000)).status == 201)
        let overTotal = try await total.put(second, UploadHarness.bytes(1000))
        #expect(overTotal.status == 413)
        #expect(overTotal.text == "The storage quota of 1500 bytes is reached\n")
        #expect(try await total.send(.GET, second.getURL).status == 404)
        // Room again once a file is deleted: the refused PUT did not use the slot up.
        try await total.server.uploads!.delete(owner: "alice", file: first.id)
        #expect(try await total.put(second, UploadHarness.bytes(1000)).status == 201)
        try await total.stop()

        let daily = try await UploadHarness { upload in
            upload.maxFileSize = 1000
            upload.dailyQuota = 2500
        }
        let a = try await daily.slot(size: 1000)
        let b = try await daily.slot(size: 1000)
        // As a restarted server: the same secret and database, no memory of those two slots.
        let restarted = UploadSlots(
            configuration: daily.slots.configuration, baseURL: daily.base, secret: Array(UploadHarness.secret.utf8),
            metadata: daily.storage)
        let c = try await restarted.makeSlot(account: "alice", filename: "c.png", size: 1000, contentType: "image/png")
        #expect(try await daily.put(a, UploadHarness.bytes(1000)).status == 201)
        #expect(try await daily.put(c, UploadHarness.bytes(1000)).status == 201)
        let overDaily = try await daily.put(b, UploadHarness.bytes(1000))
        #expect(overDaily.status == 413)
        #expect(overDaily.text == "The daily upload quota of 2500 bytes is reached\n")
        try await daily.stop()
    }

    @Test func badOrExpiredTokensAreForbidden() async throws {
        let harness = try await UploadHarness()
        let bytes = UploadHarness.bytes(100)
        let slot = try await harness.slot(size: bytes.count)
        let forged = slot.putURL.replacingOccurrences(of: "token=", with: "token=00")
        let bad = try await harness.put(UploadSlot(putURL: forged, getURL: slot.getURL, id: slot.id), bytes)
        #expect(bad.status == 403)
        #expect(bad.text == "The upload token is not valid\n")

        // Correctly signed, but for a moment already past.
        let past = Int64(Date().timeIntervalSince1970) - 10
        let expiredURL = try harness.putURL(for: slot, size: bytes.count, type: "image/png", expires: past)
        let expired = try await harness.put(UploadSlot(putURL: expiredURL, getURL: slot.getURL, id: slot.id), bytes)
        #expect(expired.status == 403)
        #expect(expired.text == "The upload slot has expired\n")

        // A token for another size does not fit this slot.
        let future = Int64(Date().timeIntervalSince1970) + 60
        let otherSize = try harness.putURL(for: slot, size: 99, type: "image/png", expires: future)
            .replacingOccurrences(of: "size=99", with: "size=100")
        #expect(try await harness.put(UploadSlot(putURL: otherSize, getURL: slot.getURL, id: slot.id), bytes).status == 403)

        // The slot's URL says whose it is, signed: it cannot be made another account's.
        let bobs = slot.putURL.replacingOccurrences(of: "owner=alice", with: "owner=bob")
        #expect(bobs != slot.putURL)
        let stolen = try await harness.put(UploadSlot(putURL: bobs, getURL: slot.getURL, id: slot.id), bytes)
        #expect(stolen.status == 403)
        #expect(stolen.text == "The upload token is not valid\n")
        // Nor another file name in the path (the URL's own file name percent-encoded another way
        // is still the same slot: see aSlotIsSingleUse).
        let renamed = slot.putURL.replacingOccurrences(of: "/photo.png?", with: "/photo.html?")
        #expect(try await harness.put(UploadSlot(putURL: renamed, getURL: slot.getURL, id: slot.id), bytes).status == 403)

        let noToken = try await harness.put(UploadSlot(putURL: slot.getURL, getURL: slot.getURL, id: slot.id), bytes)
        #expect(noToken.status == 403)
        #expect(noToken.text == "The upload URL lacks its token\n")
        let unknown = try await harness.send(.PUT, harness.base + "/upload/nope/x.png?owner=alice&size=1&type=a%2Fb&expires=1&token=a")
        #expect(unknown.status == 403)
        #expect(unknown.text == "The upload token is not valid\n")

        // None of the refused PUTs used up the slot.
        #expect(try await harness.put(slot, bytes).status == 201)
        try await harness.stop()
    }

    @Test func sizeAndTypeMustMatchTheSlot() async throws {
        let harness = try await UploadHarness()
        let slot = try await harness.slot(size: 100)
        let longer = try await harness.put(slot, UploadHarness.bytes(101))
        #expect(longer.status == 413)
        #expect(longer.text == "Content-Length 101 does not match the slot's size of 100 bytes\n")

        // A streamed body without a length that turns out longer than the slot.
        let streamed = try await harness.send(
            .PUT, slot.putURL, headers: [("Content-Type", "image/png")],
            body: .stream(GeneratedBody(count: 300, chunk: 50), length: .unknown))
        #expect(streamed.status == 413)
        #expect(streamed.text == "The body was more than 100 bytes; the slot is for 100 bytes\n")

        let wrongType = try await harness.put(slot, UploadHarness.bytes(100), type: "text/html")
        #expect(wrongType.status == 400)
        #expect(wrongType.text == "Content-Type text/html does not match the slot's image/png\n")

        // Nothing was stored, and the slot is still good for the right file.
        #expect(try await harness.send(.GET, slot.getURL).status == 404)
        #expect(try await harness.put(slot, UploadHarness.bytes(100)).status == 201)
        try await harness.stop()
    }

    @Test func slotRequestsAreRefusedOverQuota() async throws {
        let harness = try await UploadHarness { upload in
            upload.maxFileSize = 1000
            upload.dailyQuota = 2500
            upload.totalQuota = 1500
        }
        await #expect(throws: UploadSlotError.fileTooLarge(maxFileSize: 1000)) {
            try await harness.slot(size: 1001)
        }
        // Total: 1500 stored at most.
        let first = try await harness.slot(size: 1000)
        #expect(try await harness.put(first, UploadHarness.bytes(1000)).status == 200 + 1)
        do {
            _ = try await harness.slot(size: 600)
            Issue.record("a slot over the total quota was granted")
        } catch let UploadSlotError.quotaExceeded(reason, retryAfter) {
            #expect(reason.contains("Storage quota of 1500 bytes"))
            #expect(retryAfter == nil)
        }
        // Daily: 2500 requested per 24 hours, pending slots included.
        _ = try await harness.slot(size: 500)
        _ = try await harness.slot(size: 500)
        do {
            _ = try await harness.slot(size: 600)
            Issue.record("a slot over the daily quota was granted")
        } catch let UploadSlotError.quotaExceeded(reason, retryAfter) {
            #expect(reason.contains("Daily upload quota of 2500 bytes"))
            let retry = try #require(retryAfter)
            #expect(retry > Date().addingTimeInterval(86_000))
        }
        // bob has his own quota.
        _ = try await harness.slot("bob", size: 900)
        try await harness.stop()
    }

    @Test func onlyLocalAccountsAndValidRequestsGetSlots() async throws {
        let harness = try await UploadHarness()
        await #expect(throws: UploadSlotError.notAllowed("Only accounts on this server may upload")) {
            try await harness.slot("mallory", size: 10)
        }
        await #expect(throws: UploadSlotError.badRequest("The size must be a positive number of bytes")) {
            try await harness.slot(size: 0)
        }
        await #expect(throws: UploadSlotError.badRequest("The content type 'not a type' is not a valid media type")) {
            try await harness.slot(size: 10, type: "not a type")
        }
        // Path separators cannot escape the slot's directory.
        let slot = try await harness.slot(name: "../../etc/passwd", size: 10)
        #expect(slot.getURL.hasSuffix("/.._.._etc_passwd"))
        try await harness.stop()

        let closed = try await UploadHarness { $0.allowed = "none" }
        await #expect(throws: UploadSlotError.notAllowed("File upload is disabled on this server")) {
            try await closed.slot(size: 10)
        }
        try await closed.stop()
    }
}
