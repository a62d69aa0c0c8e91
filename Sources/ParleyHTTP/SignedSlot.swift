import Foundation

/// What an upload slot is, carried by its own PUT URL: the URL's path names the upload and
/// the file, its query the owner, size, content type and expiry, and a token (HMAC-SHA-256
/// over all of them) that only this server can make. So handing out a slot writes nothing:
/// the PUT finds everything it checks in the URL, and records the upload when it starts (its
/// id then makes the slot single use; see `UploadMetadataStore.claimUpload`).
struct SignedSlot: Sendable, Equatable {
    /// Random, unguessable; the upload's key in the database and its file's name in the store.
    var id: String
    var owner: String
    /// Made safe by `UploadSlots.sanitized`: no separators or control characters.
    var filename: String
    var size: Int64
    var contentType: String
    /// Seconds since 1970.
    var expires: Int64

    /// What the token signs: each part on a line of its own. No part can hold a line break
    /// (the id is hex, the filename has no control characters, the type is a checked token,
    /// the owner a JID localpart, which has none either), so no two slots sign the same text.
    var signedText: String {
        "\(id)\n\(owner)\n\(filename)\n\(size)\n\(contentType)\n\(expires)"
    }

    /// The URL path, shared by PUT and GET.
    var path: String {
        "/upload/\(id)/\(filename.addingPercentEncoding(withAllowedCharacters: Self.pathAllowed) ?? id)"
    }

    /// The PUT URL's query, without its token.
    var query: String {
        "owner=\(Self.escaped(owner))&size=\(size)&type=\(Self.escaped(contentType))&expires=\(expires)"
    }

    /// The slot a PUT names: its path's id and (percent-encoded) file name, its query's
    /// values (already percent-decoded). Nil when a part is missing or malformed.
    init?(id: String, encodedFilename: String, owner: String?, size: String?, contentType: String?, expires: String?) {
        // Decoded, not compared as sent: a client may re-encode the path its own way.
        guard let filename = encodedFilename.removingPercentEncoding, let owner, let contentType,
            let size = size.flatMap({ Int64($0) }), let expires = expires.flatMap({ Int64($0) })
        else { return nil }
        self.init(id: id, owner: owner, filename: filename, size: size, contentType: contentType, expires: expires)
    }

    init(id: String, owner: String, filename: String, size: Int64, contentType: String, expires: Int64) {
        self.id = id
        self.owner = owner
        self.filename = filename
        self.size = size
        self.contentType = contentType
        self.expires = expires
    }

    private static let pathAllowed = CharacterSet.urlPathAllowed.subtracting(["/", ";", "?", "#"])
    /// RFC 3986 unreserved: nothing a query parser could read two ways (`+` as a space, `&`).
    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    private static func escaped(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }
}
