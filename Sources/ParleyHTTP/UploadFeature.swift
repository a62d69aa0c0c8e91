import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import ParleyStorage

/// XEP-0363 §5: the PUT that stores a slot's file and the GET/HEAD that serve it, with CORS
/// so that web clients can use them. Refusals carry a one-line reason in the body.
public struct UploadFeature: HTTPFeature {
    let slots: UploadSlots
    let store: any UploadStore

    public init(slots: UploadSlots, store: any UploadStore) {
        self.slots = slots
        self.store = store
    }

    public func mount(on router: Router<HTTPContext>) {
        router.put("/upload/:id/:name") { request, context in try await put(request, context) }
        router.get("/upload/:id/:name") { request, context in try await get(request, context, head: false) }
        router.head("/upload/:id/:name") { request, context in try await get(request, context, head: true) }
        router.on("/upload/:id/:name", method: .options) { _, _ in
            var headers = Self.corsHeaders
            headers[HTTPField.Name("Access-Control-Allow-Methods")!] = "GET, HEAD, PUT, OPTIONS"
            headers[HTTPField.Name("Access-Control-Allow-Headers")!] = "Content-Type, Content-Length"
            headers[HTTPField.Name("Access-Control-Max-Age")!] = "86400"
            return Response(status: .noContent, headers: headers)
        }
    }

    private func put(_ request: Request, _ context: HTTPContext) async throws -> Response {
        let query = request.uri.queryParameters
        func value(_ name: String) -> String? { query.get(name).map { String($0) } }
        var named: SignedSlot? = nil
        if let id = context.parameters.get("id"), let name = context.parameters.get("name") {
            named = SignedSlot(
                id: id, encodedFilename: name, owner: value("owner"), size: value("size"), contentType: value("type"),
                expires: value("expires"))
        }
        let slot: SignedSlot
        switch slots.verify(named, token: value("token")) {
        case .success(let verified): slot = verified
        case .failure(let refusal): return Self.refusal(.forbidden, refusal.reason)
        }
        if let length = request.headers[.contentLength].flatMap({ Int64($0) }), length != slot.size {
            return Self.refusal(.contentTooLarge, "Content-Length \(length) does not match the slot's size of \(slot.size) bytes")
        }
        if let type = request.headers[.contentType] {
            let bare = type.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            guard bare == slot.contentType else {
                return Self.refusal(.badRequest, "Content-Type \(bare) does not match the slot's \(slot.contentType)")
            }
        }
        let record: UploadRecord
        do {
            switch try await slots.claim(slot) {
            case .claimed(let claimed): record = claimed
            case .alreadyUsed: return Self.refusal(.conflict, "This upload slot has already been used")
            case .overDailyQuota:
                return Self.refusal(.contentTooLarge, "The daily upload quota of \(slots.configuration.dailyQuota) bytes is reached")
            case .overTotalQuota:
                return Self.refusal(.contentTooLarge, "The storage quota of \(slots.configuration.totalQuota) bytes is reached")
            }
        } catch StorageError.accountNotFound {
            return Self.refusal(.forbidden, "The account of this upload slot no longer exists")
        }
        do {
            try await store.write(request.body, accountID: record.accountID, id: slot.id, size: slot.size)
        } catch let UploadStoreError.sizeMismatch(expected, received) {
            // The slot stays usable: a client whose body was cut short may try again.
            _ = try? await slots.metadata.deleteUploads(ids: [slot.id])
            let got = received > expected ? "more than \(expected)" : "\(received)"
            return Self.refusal(.contentTooLarge, "The body was \(got) bytes; the slot is for \(expected) bytes")
        } catch {
            _ = try? await slots.metadata.deleteUploads(ids: [slot.id])
            throw error
        }
        guard try await slots.metadata.transitionUpload(id: slot.id, from: .uploading, to: .stored) else {
            // Deleted meanwhile (its account, or an admin): keep nothing.
            try? await store.remove(accountID: record.accountID, id: slot.id)
            return Self.refusal(.gone, "The upload slot was deleted during the upload")
        }
        slots.usage.fileStored(by: slot.owner, size: slot.size, slotExpires: slot.expires)
        return Response(status: .created, headers: Self.corsHeaders)
    }

    private func get(_ request: Request, _ context: HTTPContext, head: Bool) async throws -> Response {
        guard let id = context.parameters.get("id"), let record = try await slots.metadata.upload(id: id),
            record.state == .stored
        else {
            return Self.refusal(.notFound, "No such file")
        }
        var headers = Self.corsHeaders
        let etag = "\"\(record.id)\""
        headers[.contentType] = record.contentType
        headers[.eTag] = etag
        headers[.acceptRanges] = "bytes"
        // Files never change under their URL; they only expire.
        let maxAge = slots.configuration.expiryDays > 0 ? slots.configuration.expiryDays * 86_400 : 31_536_000
        headers[.cacheControl] = "public, max-age=\(maxAge), immutable"
        headers[.xContentTypeOptions] = "nosniff"
        headers[.contentSecurityPolicy] = "default-src 'none'; sandbox"
        headers[.contentDisposition] = Self.disposition(record)
        if let match = request.headers[.ifNoneMatch], match == etag || match == "*" {
            return Response(status: .notModified, headers: headers)
        }
        var range: ClosedRange<Int>? = nil
        if let header = request.headers[.range] {
            switch ByteRange.parse(header, size: Int(record.size)) {
            case .satisfiable(let bytes): range = bytes
            case .unsatisfiable:
                headers[.contentRange] = "bytes */\(record.size)"
                headers[.contentType] = "text/plain; charset=utf-8"
                headers[.contentDisposition] = nil
                return Response(
                    status: .rangeNotSatisfiable, headers: headers,
                    body: .init(byteBuffer: ByteBuffer(string: "The range \(header) is outside the file's \(record.size) bytes\n")))
            case .ignored: break
            }
        }
        let status: HTTPResponse.Status = range == nil ? .ok : .partialContent
        if let range { headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(record.size)" }
        headers[.contentLength] = String(range.map(\.count) ?? Int(record.size))
        if head { return Response(status: status, headers: headers) }
        let body = try await store.read(accountID: record.accountID, id: id, range: range, context: context)
        return Response(status: status, headers: headers, body: body)
    }

    /// Media a browser shows in place; anything else (HTML and SVG included, which could run
    /// script in our origin) downloads.
    static func disposition(_ record: UploadRecord) -> String {
        let type = record.contentType
        let inline = ["image/", "audio/", "video/"].contains { type.hasPrefix($0) } && type != "image/svg+xml"
            || type == "text/plain"
        let ascii = String(record.filename.unicodeScalars.map { $0.isASCII && $0 != "\"" && $0 != "\\" ? Character($0) : "_" })
        let encoded = record.filename.addingPercentEncoding(withAllowedCharacters: Self.attrChar) ?? ascii
        return "\(inline ? "inline" : "attachment"); filename=\"\(ascii)\"; filename*=UTF-8''\(encoded)"
    }

    /// RFC 8187 attr-char: what `filename*` may carry unescaped.
    private static let attrChar = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$&+-.^_`|~")

    static let corsHeaders: HTTPFields = [
        HTTPField.Name("Access-Control-Allow-Origin")!: "*",
        HTTPField.Name("Access-Control-Expose-Headers")!: "Content-Length, Content-Range, ETag, Content-Disposition",
    ]

    static func refusal(_ status: HTTPResponse.Status, _ reason: String) -> Response {
        var headers = corsHeaders
        headers[.contentType] = "text/plain; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: reason + "\n")))
    }
}
