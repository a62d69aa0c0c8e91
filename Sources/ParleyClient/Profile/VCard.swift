import ParleyCore

/// A vcard-temp (XEP-0054) card: the fields people fill in, plus whatever else the card held,
/// kept as it was so that saving an edited card does not erase what this client cannot show.
public struct VCard: Sendable, Equatable {
    public struct Photo: Sendable, Equatable {
        public var type: String
        public var data: [UInt8]

        public init(type: String, data: [UInt8]) {
            self.type = type
            self.data = data
        }

        /// XEP-0153's photo hash: SHA-1 hex of the bytes.
        public var hash: String { sha1Hex(data) }
    }

    public var fullName: String?
    public var nickname: String?
    public var emails: [String] = []
    public var url: String?
    public var description: String?
    public var birthday: String?
    public var photo: Photo?
    /// The card's other elements, written back untouched.
    var otherElements: [XMLElement] = []

    public init(fullName: String? = nil, nickname: String? = nil, emails: [String] = [], url: String? = nil, description: String? = nil, photo: Photo? = nil) {
        self.fullName = fullName
        self.nickname = nickname
        self.emails = emails
        self.url = url
        self.description = description
        self.photo = photo
    }

    /// NOTE is read as the description: servers that store vCards as vCard 4 (Prosody's
    /// mod_vcard_legacy) turn DESC into a note and give it back as NOTE.
    static let known: Set<String> = ["FN", "NICKNAME", "EMAIL", "URL", "DESC", "NOTE", "BDAY", "PHOTO"]

    /// Reads a `<vCard xmlns='vcard-temp'/>`. A PHOTO whose BINVAL is not base64 is dropped
    /// (the rest of the card still counts); BINVAL may be folded over lines.
    init(element: XMLElement) {
        func field(_ name: String) -> String? {
            element.firstChild(name, namespace: ProfileNamespace.vcard).map(\.text).flatMap { $0.isEmpty ? nil : $0 }
        }
        fullName = field("FN")
        nickname = field("NICKNAME")
        url = field("URL")
        description = field("DESC") ?? field("NOTE")
        birthday = field("BDAY")
        emails = element.children("EMAIL", namespace: ProfileNamespace.vcard).compactMap {
            $0.firstChild("USERID", namespace: ProfileNamespace.vcard)?.text
        }.filter { !$0.isEmpty }
        if let photo = element.firstChild("PHOTO", namespace: ProfileNamespace.vcard),
            let binval = photo.firstChild("BINVAL", namespace: ProfileNamespace.vcard)?.text
        {
            let compact = binval.filter { !$0.isWhitespace }
            if !compact.isEmpty, let data = try? Base64.decode(compact) {
                let declared = photo.firstChild("TYPE", namespace: ProfileNamespace.vcard)?.text
                self.photo = Photo(type: declared.flatMap { $0.isEmpty ? nil : $0 } ?? ImageInfo(data)?.type ?? "application/octet-stream", data: data)
            }
        }
        otherElements = element.elements.filter { !Self.known.contains($0.name) || $0.namespace != ProfileNamespace.vcard }
    }

    var element: XMLElement {
        let ns = ProfileNamespace.vcard
        var card = XMLElement("vCard", namespace: ns)
        if let fullName { card.append(XMLElement("FN", namespace: ns, text: fullName)) }
        if let nickname { card.append(XMLElement("NICKNAME", namespace: ns, text: nickname)) }
        for email in emails {
            card.append(XMLElement("EMAIL", namespace: ns, [:], [XMLElement("INTERNET", namespace: ns), XMLElement("USERID", namespace: ns, text: email)]))
        }
        if let url { card.append(XMLElement("URL", namespace: ns, text: url)) }
        if let description { card.append(XMLElement("DESC", namespace: ns, text: description)) }
        if let birthday { card.append(XMLElement("BDAY", namespace: ns, text: birthday)) }
        if let photo {
            card.append(XMLElement("PHOTO", namespace: ns, [:], [
                XMLElement("TYPE", namespace: ns, text: photo.type), XMLElement("BINVAL", namespace: ns, text: Base64.encode(photo.data)),
            ]))
        }
        for other in otherElements { card.append(other) }
        return card
    }
}

/// Lower-case hex SHA-1: the id of XEP-0084 avatars and the XEP-0153 photo hash.
func sha1Hex(_ bytes: [UInt8]) -> String {
    let digest = (try? HashFunction.sha1.digest(bytes)) ?? []
    return digest.map { byte in
        let hex = String(byte, radix: 16)
        return byte < 16 ? "0" + hex : hex
    }.joined()
}
