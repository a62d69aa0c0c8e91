import Foundation
import ParleyCore

/// The upload service an account's server offers (XEP-0363 §3).
struct UploadServiceInfo: Sendable, Equatable {
    var jid: String
    /// The `max-file-size` it announced, if any.
    var maxFileSize: Int64?

    /// Reads a disco#info result: nil unless it lists the upload feature.
    init?(jid: String, info query: XMLElement) {
        guard query.children("feature").contains(where: { $0[attribute: "var"] == MediaNamespace.httpUpload }) else { return nil }
        self.jid = jid
        let form = query.children("x", namespace: XMLNamespace.dataForms).first { form in
            form.children("field").contains { $0[attribute: "var"] == "FORM_TYPE" && $0.firstChild("value")?.text == MediaNamespace.httpUpload }
        }
        maxFileSize = form?.children("field").first { $0[attribute: "var"] == "max-file-size" }?.firstChild("value")
            .flatMap { Int64($0.text.trimmingCharacters(in: .whitespaces)) }
    }
}

/// A slot the service handed out (§4): where to PUT (with which headers) and where the file
/// will be.
struct UploadSlotGrant: Sendable, Equatable {
    var putURL: String
    var getURL: String
    var headers: [(name: String, value: String)]

    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.putURL == rhs.putURL && lhs.getURL == rhs.getURL && lhs.headers.elementsEqual(rhs.headers) { $0 == $1 }
    }

    /// §4: only these headers may be sent on; others (and any value with a line break, which
    /// could smuggle more headers) are dropped.
    static let allowedHeaders: Set<String> = ["authorization", "cookie", "expires"]

    static func request(filename: String, size: Int64, contentType: String, to service: String) -> XMLElement {
        let request = XMLElement(
            "request", namespace: MediaNamespace.httpUpload, ["filename": filename, "size": String(size), "content-type": contentType])
        return XMLElement("iq", namespace: XMLNamespace.client, ["type": "get", "to": service], [request])
    }

    init(result: XMLElement) throws {
        let ns = MediaNamespace.httpUpload
        guard let slot = result.firstChild("slot", namespace: ns), let put = slot.firstChild("put", namespace: ns),
            let putURL = put[attribute: "url"], let getURL = slot.firstChild("get", namespace: ns)?[attribute: "url"],
            Self.isHTTP(putURL), Self.isHTTP(getURL)
        else {
            throw ClientError.uploadRefused(StanzaError(.undefinedCondition, text: "The upload service answered without a usable slot."))
        }
        self.putURL = putURL
        self.getURL = getURL
        headers = put.children("header", namespace: ns).compactMap { header in
            guard let name = header[attribute: "name"], Self.allowedHeaders.contains(name.lowercased()),
                !header.text.contains(where: { $0 == "\r" || $0 == "\n" })
            else { return nil }
            return (name, header.text)
        }
    }

    private static func isHTTP(_ url: String) -> Bool {
        guard let scheme = URLComponents(string: url)?.scheme?.lowercased() else { return false }
        return scheme == "https" || scheme == "http"
    }

    /// §4.3's refusals, as errors a person can act on.
    static func clientError(_ error: StanzaError, size: Int64) -> ClientError {
        let text = error.text ?? error.condition.rawValue
        if let tooLarge = error.applicationCondition, tooLarge.name == "file-too-large" {
            let max = tooLarge.firstChild("max-file-size").flatMap { Int64($0.text.trimmingCharacters(in: .whitespaces)) }
            if let max { return .fileTooLarge(size: size, max: max) }
        }
        switch error.condition {
        case .notAllowed, .forbidden:
            return .uploadNotAllowed(text)
        case .resourceConstraint:
            let stamp = error.applicationCondition.flatMap { $0.name == "retry" ? $0[attribute: "stamp"] : nil }
            return .uploadQuotaExceeded(text, retryAfter: stamp.flatMap(IncomingMessage.parseStamp))
        default:
            return .uploadRefused(error)
        }
    }
}
