import Foundation
@testable import ParleyClient
import ParleyCore
import Testing

/// The pieces of the profile features that need no server: the XEP-0115 hash, reading image
/// sizes, the display-name rule, vCard reading.
@Suite struct ProfileUnitTests {
    // MARK: XEP-0115

    @Test func capsVerOfTheSimpleExampleInXEP0115() {
        let features = ["http://jabber.org/protocol/caps", "http://jabber.org/protocol/disco#info", "http://jabber.org/protocol/disco#items", "http://jabber.org/protocol/muc"]
        let identity = EntityCapabilities.Identity(category: "client", type: "pc", name: "Exodus 0.9.1")
        // §5.2: the string and its hash, given in the XEP.
        #expect(EntityCapabilities.verificationString(identities: [identity], features: features.reversed())
            == "client/pc//Exodus 0.9.1<http://jabber.org/protocol/caps<http://jabber.org/protocol/disco#info<http://jabber.org/protocol/disco#items<http://jabber.org/protocol/muc<")
        #expect(EntityCapabilities.ver(identities: [identity], features: features.reversed()) == "QgayPKawpkPSDYmwT/WM94uAlu0=")
    }

    @Test func capsVerOfTheComplexExampleWithLanguagesAndAForm() {
        let identities = [
            EntityCapabilities.Identity(category: "client", type: "pc", lang: "en", name: "Psi 0.11"),
            EntityCapabilities.Identity(category: "client", type: "pc", lang: "el", name: "Ψ 0.11"),
        ]
        let features = ["http://jabber.org/protocol/muc", "http://jabber.org/protocol/disco#info", "http://jabber.org/protocol/caps", "http://jabber.org/protocol/disco#items"]
        func field(_ name: String, _ values: [String], type: String? = nil) -> XMLElement {
            var field = XMLElement("field", namespace: XMLNamespace.dataForms, ["var": name])
            if let type { field.setAttribute("type", type) }
            for value in values { field.append(XMLElement("value", namespace: XMLNamespace.dataForms, text: value)) }
            return field
        }
        var form = XMLElement("x", namespace: XMLNamespace.dataForms, ["type": "result"])
        for child in [
            field("os_version", ["10.5.1"]), field("FORM_TYPE", ["urn:xmpp:dataforms:softwareinfo"], type: "hidden"),
            field("ip_version", ["ipv6", "ipv4"]), field("os", ["Mac"]), field("software", ["Psi"]), field("software_version", ["0.11"]),
        ] { form.append(child) }
        #expect(EntityCapabilities.ver(identities: identities, features: features, forms: [form]) == "q07IKJEyjvHSyhy//CH0CxmKi8w=")
    }

    /// The hash in our presence is the hash of what we answer to disco#info.
    @Test func ourCapsHashMatchesOurDiscoInfoAnswer() {
        let answer = EntityCapabilities.discoInfo(node: nil)
        let identities = answer.children("identity").map {
            EntityCapabilities.Identity(category: $0[attribute: "category"]!, type: $0[attribute: "type"]!, name: $0[attribute: "name"])
        }
        let features = answer.children("feature").compactMap { $0[attribute: "var"] }
        #expect(features.contains("urn:xmpp:avatar:metadata+notify") && features.contains("http://jabber.org/protocol/nick+notify"))
        let presence = EntityCapabilities.presenceElement
        #expect(presence[attribute: "ver"] == EntityCapabilities.ver(identities: identities, features: features))
        #expect(presence[attribute: "hash"] == "sha-1" && presence.namespace == "http://jabber.org/protocol/caps")
    }

    // MARK: Images

    static func png(width: UInt32, height: UInt32) -> [UInt8] {
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
        for value in [width, height] { bytes += withUnsafeBytes(of: value.bigEndian, Array.init) }
        bytes += [8, 6, 0, 0, 0, 0x12, 0x34, 0x56, 0x78]  // depth, colour type, …, CRC (unchecked)
        return bytes + Array(repeating: 0, count: 20)
    }

    @Test func imageSizesAreReadFromTheHeaders() {
        #expect(ImageInfo(Self.png(width: 300, height: 200)) == ImageInfo(type: "image/png", width: 300, height: 200))
        // JPEG: SOI, an APP0 segment to skip, a fill byte, then SOF2 (progressive): height 480, width 640.
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x06, 0x4A, 0x46, 0x49, 0x46, 0xFF, 0xFF, 0xC2, 0x00, 0x11, 0x08, 0x01, 0xE0, 0x02, 0x80, 0x03]
        #expect(ImageInfo(jpeg) == ImageInfo(type: "image/jpeg", width: 640, height: 480))
        // A DHT segment (C4) sits in the SOF range but is not a frame: skipped.
        let withTable: [UInt8] = [0xFF, 0xD8, 0xFF, 0xC4, 0x00, 0x04, 0x00, 0x00, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00, 0x10, 0x00, 0x20, 0x03]
        #expect(ImageInfo(withTable) == ImageInfo(type: "image/jpeg", width: 32, height: 16))
        #expect(ImageInfo(Array("GIF89a".utf8) + [0x40, 0x01, 0xF0, 0x00]) == ImageInfo(type: "image/gif", width: 320, height: 240))
        #expect(ImageInfo(Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBPVP8 ".utf8))?.type == "image/webp")
        // Truncated headers still name the type; other bytes are no image.
        #expect(ImageInfo([0xFF, 0xD8, 0xFF]) == ImageInfo(type: "image/jpeg"))
        #expect(ImageInfo(Array(Self.png(width: 1, height: 1).prefix(10))) == ImageInfo(type: "image/png"))
        #expect(ImageInfo(Array("hello, world".utf8)) == nil)
        #expect(ImageInfo([]) == nil)
    }

    @Test func avatarIdsAreLowercaseSHA1Hex() {
        #expect(sha1Hex(Array("abc".utf8)) == "a9993e364706816aba3e25717850c26c9cd0d89d")
    }

    // MARK: Names

    @Test func displayNameRule() throws {
        let jid = try JID("bob@example.org")
        #expect(DisplayName.resolve(rosterName: "Bobby", nickname: "Bob", vcardNickname: "B", vcardFullName: "Robert", jid: jid) == "Bobby")
        #expect(DisplayName.resolve(rosterName: nil, nickname: "Bob", vcardNickname: "B", vcardFullName: "Robert", jid: jid) == "Bob")
        #expect(DisplayName.resolve(rosterName: " ", nickname: nil, vcardNickname: "B", vcardFullName: "Robert", jid: jid) == "B")
        #expect(DisplayName.resolve(rosterName: nil, nickname: nil, vcardNickname: nil, vcardFullName: "Robert", jid: jid) == "Robert")
        #expect(DisplayName.resolve(rosterName: nil, nickname: nil, vcardNickname: nil, vcardFullName: nil, jid: jid) == "bob")
        #expect(DisplayName.resolve(rosterName: nil, nickname: nil, vcardNickname: nil, vcardFullName: nil, jid: try JID("example.org")) == "example.org")
        // A name that is only terminal escapes does not count; one with some keeps the rest.
        #expect(DisplayName.resolve(rosterName: nil, nickname: "\u{1B}\u{7}", vcardNickname: nil, vcardFullName: nil, jid: jid) == "bob")
        #expect(DisplayName.resolve(rosterName: nil, nickname: "Bo\u{1B}b\n", vcardNickname: nil, vcardFullName: nil, jid: jid) == "Bob")
    }

    // MARK: vCard

    @Test func aVCardIsReadAndWrittenBackWithWhatItDoesNotKnow() {
        let photo = Self.png(width: 2, height: 2)
        let encoded = Base64.encode(photo)
        let folded = encoded.prefix(20) + "\n  " + encoded.dropFirst(20)
        let ns = "vcard-temp"
        let card = XMLElement("vCard", namespace: ns, [:], [
            XMLElement("FN", namespace: ns, text: "Robert Smith"), XMLElement("NICKNAME", namespace: ns, text: "Bob"),
            XMLElement("EMAIL", namespace: ns, [:], [XMLElement("INTERNET", namespace: ns), XMLElement("USERID", namespace: ns, text: "bob@example.org")]),
            XMLElement("ORG", namespace: ns, [:], [XMLElement("ORGNAME", namespace: ns, text: "Example")]),
            XMLElement("PHOTO", namespace: ns, [:], [XMLElement("TYPE", namespace: ns, text: "image/png"), XMLElement("BINVAL", namespace: ns, text: String(folded))]),
        ])
        let read = VCard(element: card)
        #expect(read.fullName == "Robert Smith" && read.nickname == "Bob" && read.emails == ["bob@example.org"])
        #expect(read.photo?.data == photo && read.photo?.hash == sha1Hex(photo))
        let written = read.element
        #expect(written.firstChild("ORG", namespace: ns)?.firstChild("ORGNAME", namespace: ns)?.text == "Example")
        #expect(VCard(element: written) == read)
        // A photo that is not base64 is dropped, the rest stays.
        let broken = XMLElement("vCard", namespace: ns, [:], [
            XMLElement("FN", namespace: ns, text: "X"), XMLElement("PHOTO", namespace: ns, [:], [XMLElement("BINVAL", namespace: ns, text: "not base64!")]),
        ])
        #expect(VCard(element: broken).photo == nil && VCard(element: broken).fullName == "X")
    }
}
