import Foundation
import ParleyCore

/// A file shared in a message (XEP-0363 upload, XEP-0066 link, XEP-0446 metadata): where it
/// is, and what the sender said it is. Everything but `url` comes from the sender and is
/// checked on download (size, hash), never trusted for anything else.
public struct MediaAttachment: Sendable, Equatable, Codable {
    /// How a chat shows it, from its media type.
    public enum Kind: String, Sendable {
        case image, audio, video, file
    }

    public var url: String
    /// The file name the sender gave (or the URL's last path segment), for display only:
    /// `ChatClient.localPath(for:)` makes a safe one from it.
    public var name: String
    public var size: Int64?
    public var mediaType: String?
    /// SHA-256 of the content, base64 (XEP-0300).
    public var sha256: String?
    public var width: Int?
    public var height: Int?

    public init(
        url: String, name: String, size: Int64? = nil, mediaType: String? = nil, sha256: String? = nil, width: Int? = nil,
        height: Int? = nil
    ) {
        self.url = url
        self.name = name
        self.size = size
        self.mediaType = mediaType
        self.sha256 = sha256
        self.width = width
        self.height = height
    }

    public var kind: Kind {
        switch mediaType?.split(separator: "/").first?.lowercased() {
        case "image": .image
        case "audio": .audio
        case "video": .video
        default: .file
        }
    }

    /// Longest name and URL read from a message: a display name has no use for more, and the
    /// XEP-0446 text fields are otherwise unbounded.
    static let maxNameLength = 255
    static let maxURLLength = 4096

    // MARK: Reading

    /// The attachment of a received message: an XEP-0066 link (with the XEP-0446 metadata when
    /// present, directly in the message or in an XEP-0447 wrapper), or else a body that is
    /// nothing but an https URL, as clients without OOB send. nil for anything else.
    public init?(message: XMLElement) {
        let oob = message.children("x", namespace: MediaNamespace.outOfBand).lazy.compactMap { $0.firstChild("url")?.text }.first
        let body = message.firstChild("body")?.text
        let link = oob.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        guard let url = link.flatMap({ Self.acceptedURL($0, schemes: ["https", "http"]) }) ?? body.flatMap(Self.bodyURL) else {
            return nil
        }
        self.init(url: url, name: Self.name(fromURL: url))
        let metadata =
            message.firstChild("file", namespace: MediaNamespace.fileMetadata)
            ?? message.firstChild("file-sharing", namespace: MediaNamespace.statelessFileSharing)?
            .firstChild("file", namespace: MediaNamespace.fileMetadata)
        if let metadata { apply(metadata) }
        if mediaType == nil { mediaType = MediaTypes.guess(forName: name) }
    }

    /// A body that is one https URL and nothing else (trimmed), as a link-only attachment.
    public init?(bodyURL body: String) {
        guard let url = Self.bodyURL(body) else { return nil }
        self.init(url: url, name: Self.name(fromURL: url), mediaType: MediaTypes.guess(forName: Self.name(fromURL: url)))
    }

    private static func bodyURL(_ body: String) -> String? {
        let trimmed = body.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.contains(where: \.isWhitespace) else { return nil }
        return acceptedURL(trimmed, schemes: ["https"])
    }

    private static func acceptedURL(_ text: String, schemes: Set<String>) -> String? {
        guard text.utf8.count <= maxURLLength, let components = URLComponents(string: text),
            let scheme = components.scheme?.lowercased(), schemes.contains(scheme), components.host?.isEmpty == false
        else { return nil }
        return text
    }

    /// The URL's last path segment, percent-decoded; "file" when it has none.
    static func name(fromURL url: String) -> String {
        let path = URLComponents(string: url)?.path ?? ""
        let last = path.split(separator: "/").last.map(String.init) ?? ""
        let decoded = printable(last.removingPercentEncoding ?? last)
        return decoded.isEmpty ? "file" : String(decoded.prefix(maxNameLength))
    }

    /// The sender's name without control characters: a name is shown on terminals, where an
    /// escape sequence in it would act rather than show.
    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { $0.properties.generalCategory != .control }))
    }

    /// XEP-0446 §3's fields; malformed ones (a negative size, say) are ignored, not trusted.
    private mutating func apply(_ file: XMLElement) {
        let ns = MediaNamespace.fileMetadata
        if let text = file.firstChild("name", namespace: ns)?.text.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty {
            name = Self.printable(String(text.prefix(Self.maxNameLength)))
        }
        if let text = file.firstChild("media-type", namespace: ns)?.text, text.contains("/"), text.utf8.count <= 255 {
            mediaType = text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        }
        size = file.firstChild("size", namespace: ns).flatMap { Int64($0.text) }.flatMap { $0 >= 0 ? $0 : nil }
        width = file.firstChild("width", namespace: ns).flatMap { Int($0.text) }.flatMap { $0 > 0 ? $0 : nil }
        height = file.firstChild("height", namespace: ns).flatMap { Int($0.text) }.flatMap { $0 > 0 ? $0 : nil }
        let hash = file.children("hash", namespace: MediaNamespace.hashes).first { $0[attribute: "algo"] == "sha-256" }?.text
        // A SHA-256 is 32 bytes; anything else would only ever fail the check.
        if let hash, let bytes = try? Base64.decode(hash.trimmingCharacters(in: .whitespacesAndNewlines)), bytes.count == 32 {
            sha256 = Base64.encode(bytes)
        }
    }

    // MARK: Writing

    /// `<x xmlns='jabber:x:oob'><url>…</url></x>` (XEP-0066 §5).
    var outOfBandElement: XMLElement {
        XMLElement("x", namespace: MediaNamespace.outOfBand, [:], [XMLElement("url", namespace: MediaNamespace.outOfBand, text: url)])
    }

    /// `<file xmlns='urn:xmpp:file:metadata:0'>` (XEP-0446) with what is known.
    var metadataElement: XMLElement {
        let ns = MediaNamespace.fileMetadata
        var file = XMLElement("file", namespace: ns)
        if let mediaType { file.append(XMLElement("media-type", namespace: ns, text: mediaType)) }
        file.append(XMLElement("name", namespace: ns, text: name))
        if let size { file.append(XMLElement("size", namespace: ns, text: String(size))) }
        if let sha256 { file.append(XMLElement("hash", namespace: MediaNamespace.hashes, ["algo": "sha-256"], text: sha256)) }
        if let width { file.append(XMLElement("width", namespace: ns, text: String(width))) }
        if let height { file.append(XMLElement("height", namespace: ns, text: String(height))) }
        return file
    }
}

/// Media types by file name, for files whose first bytes `ImageInfo` does not recognise.
enum MediaTypes {
    private static let byExtension: [String: String] = [
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif", "webp": "image/webp",
        "heic": "image/heic", "svg": "image/svg+xml", "mp3": "audio/mpeg", "m4a": "audio/mp4", "ogg": "audio/ogg",
        "oga": "audio/ogg", "opus": "audio/ogg", "wav": "audio/wav", "flac": "audio/flac", "aac": "audio/aac", "mp4": "video/mp4",
        "m4v": "video/mp4", "mov": "video/quicktime", "webm": "video/webm", "mkv": "video/x-matroska", "pdf": "application/pdf",
        "txt": "text/plain", "zip": "application/zip", "json": "application/json",
    ]

    static func guess(forName name: String) -> String? {
        let ext = (name as NSString).pathExtension.lowercased()
        return byExtension[ext]
    }
}
