import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import ParleyHTTP

@Suite("XEP-0363 upload over real HTTP")
struct UploadRoundTripTests {
    @Test func putThenGetReturnsTheSameBytesWithHeaders() async throws {
        let harness = try await UploadHarness()
        let bytes = UploadHarness.bytes(200_000)
        let slot = try await harness.slot(name: "holiday photo.png", size: bytes.count)
        #expect(slot.putURL.hasPrefix(harness.base + "/upload/"))
        #expect(slot.getURL.hasSuffix("/holiday%20photo.png"))

        let put = try await harness.put(slot, bytes)
        #expect(put.status == 201)
        #expect(put.headers["access-control-allow-origin"] == "*")

        let get = try await harness.send(.GET, slot.getURL)
        #expect(get.status == 200)
        #expect(get.body == bytes)
        #expect(get.headers["content-type"] == "image/png")
        #expect(get.headers["content-length"] == "\(bytes.count)")
        #expect(get.headers["etag"] == "\"\(slot.id)\"")
        #expect(get.headers["cache-control"]?.contains("max-age=") == true)
        #expect(get.headers["content-disposition"]?.hasPrefix("inline;") == true)
        #expect(get.headers["access-control-allow-origin"] == "*")
        #expect(get.headers["x-content-type-options"] == "nosniff")
        try await harness.stop()
    }

    @Test func nonMediaTypesDownloadAsAttachments() async throws {
        let harness = try await UploadHarness()
        let bytes = UploadHarness.bytes(1000)
        let slot = try await harness.slot(name: "page.html", size: bytes.count, type: "text/html")
        #expect(try await harness.put(slot, bytes, type: "text/html").status == 201)
        let get = try await harness.send(.GET, slot.getURL)
        #expect(get.headers["content-disposition"] == "attachment; filename=\"page.html\"; filename*=UTF-8''page.html")
        try await harness.stop()
    }

    @Test func headRangeAndConditionalRequests() async throws {
        let harness = try await UploadHarness()
        let bytes = UploadHarness.bytes(50)
        let slot = try await harness.slot(size: bytes.count)
        #expect(try await harness.put(slot, bytes).status == 201)

        let head = try await harness.send(.HEAD, slot.getURL)
        #expect(head.status == 200)
        #expect(head.headers["content-length"] == "50")
        #expect(head.body.isEmpty)

        let first = try await harness.send(.GET, slot.getURL, headers: [("Range", "bytes=0-9")])
        #expect(first.status == 206)
        #expect(first.body == Array(bytes[0...9]))
        #expect(first.headers["content-range"] == "bytes 0-9/50")

        let tail = try await harness.send(.GET, slot.getURL, headers: [("Range", "bytes=-5")])
        #expect(tail.status == 206)
        #expect(tail.body == Array(bytes[45...49]))

        let open = try await harness.send(.GET, slot.getURL, headers: [("Range", "bytes=40-")])
        #expect(open.body == Array(bytes[40...49]))
        #expect(open.headers["content-range"] == "bytes 40-49/50")

        let outside = try await harness.send(.GET, slot.getURL, headers: [("Range", "bytes=50-60")])
        #expect(outside.status == 416)
        #expect(outside.headers["content-range"] == "bytes */50")
        #expect(outside.text.contains("outside"))

        let cached = try await harness.send(.GET, slot.getURL, headers: [("If-None-Match", "\"\(slot.id)\"")])
        #expect(cached.status == 304)
        #expect(cached.body.isEmpty)
        try await harness.stop()
    }

    @Test func corsPreflightAllowsPut() async throws {
        let harness = try await UploadHarness()
        let slot = try await harness.slot(size: 10)
        let preflight = try await harness.send(
            .OPTIONS, slot.putURL, headers: [("Origin", "https://web.example"), ("Access-Control-Request-Method", "PUT")])
        #expect(preflight.status == 204)
        #expect(preflight.headers["access-control-allow-origin"] == "*")
        #expect(preflight.headers["access-control-allow-methods"]?.contains("PUT") == true)
        #expect(preflight.headers["access-control-allow-headers"]?.contains("Content-Type") == true)
        try await harness.stop()
    }

    @Test func healthCheck() async throws {
        let harness = try await UploadHarness()
        let health = try await harness.send(.GET, harness.base + "/health")
        #expect(health.status == 200)
        #expect(health.text == "ok\n")
        try await harness.stop()
    }

    @Test func concurrentUploadsAllLand() async throws {
        let harness = try await UploadHarness()
        let uploads = try await withThrowingTaskGroup(of: (UploadSlot, [UInt8], Int).self) { group in
            for index in 0..<8 {
                group.addTask {
                    let bytes = UploadHarness.bytes(100_000 + index, seed: UInt8(index))
                    let slot = try await harness.slot(name: "f\(index).bin", size: bytes.count, type: "application/octet-stream")
                    let reply = try await harness.put(slot, bytes, type: "application/octet-stream")
                    return (slot, bytes, reply.status)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(uploads.count == 8)
        for (slot, bytes, status) in uploads {
            #expect(status == 201)
            #expect(try await harness.send(.GET, slot.getURL).body == bytes)
        }
        try await harness.stop()
    }
}
