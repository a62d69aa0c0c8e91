import Foundation
import ParleyCore
import Testing

@testable import ParleyClient

/// Recognising media messages as other clients send them, from received XML: what counts as
/// one, and which sender claims are kept or dropped.
@Suite struct MediaAttachmentTests {
    static let hash = Base64.encode(try! HashFunction.sha256.digest(Array("content".utf8)))

    /// Parses one stanza as it would arrive on a client stream.
    func stanza(_ xml: String) throws -> XMLElement {
        let parser = XMLStreamParser()
        let events = try parser.feed(Array(
            "<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>\(xml)".utf8))
        return try #require(events.lazy.compactMap { if case .stanza(let stanza) = $0 { stanza } else { nil } }.first)
    }

    @Test func aLinkWithMetadataDirectlyOrInAStatelessFileSharingWrapper() throws {
        let metadata = """
            <file xmlns='urn:xmpp:file:metadata:0'><media-type>video/mp4</media-type><name>clip.mp4</name><size>2048</size>\
            <hash xmlns='urn:xmpp:hashes:2' algo='sha-1'>AAAA</hash><hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>\(Self.hash)</hash>\
            <width>1280</width><height>720</height></file>
            """
        let direct = try stanza("""
            <message from='a@x/r' type='chat'><body>https://up.x/1/clip.mp4</body>\
            <x xmlns='jabber:x:oob'><url>https://up.x/1/clip.mp4</url></x>\(metadata)</message>
            """)
        let expected = MediaAttachment(
            url: "https://up.x/1/clip.mp4", name: "clip.mp4", size: 2048, mediaType: "video/mp4", sha256: Self.hash, width: 1280, height: 720)
        #expect(MediaAttachment(message: direct) == expected)
        #expect(MediaAttachment(message: direct)?.kind == .video)
        let wrapped = try stanza("""
            <message from='a@x/r' type='chat'><body>https://up.x/1/clip.mp4</body>\
            <x xmlns='jabber:x:oob'><url>https://up.x/1/clip.mp4</url></x>\
            <file-sharing xmlns='urn:xmpp:sfs:0'>\(metadata)</file-sharing></message>
            """)
        #expect(MediaAttachment(message: wrapped) == expected)
    }

    @Test func aLinkAloneTakesItsNameAndTypeFromTheURL() throws {
        let oob = try stanza("""
            <message from='a@x/r'><body>look</body><x xmlns='jabber:x:oob'><url>http://up.x/2/voice%20note.ogg</url></x></message>
            """)
        #expect(MediaAttachment(message: oob) == MediaAttachment(url: "http://up.x/2/voice%20note.ogg", name: "voice note.ogg", mediaType: "audio/ogg"))
        let bodyOnly = try stanza("<message from='a@x/r'><body> https://up.x/3/photo.JPG </body></message>")
        #expect(MediaAttachment(message: bodyOnly) == MediaAttachment(url: "https://up.x/3/photo.JPG", name: "photo.JPG", mediaType: "image/jpeg"))
        #expect(MediaAttachment(message: bodyOnly)?.kind == .image)
        let unknown = try stanza("<message from='a@x/r'><body>https://up.x/</body></message>")
        #expect(MediaAttachment(message: unknown)?.name == "file" && MediaAttachment(message: unknown)?.kind == .file)
    }

    @Test func textThatIsNotJustALinkIsNoMediaMessage() throws {
        for body in ["see https://up.x/1/a.png", "http://up.x/1/a.png", "ftp://up.x/1/a.png", "https://", "hello"] {
            #expect(MediaAttachment(message: try stanza("<message from='a@x/r'><body>\(body)</body></message>")) == nil, "\(body)")
        }
        #expect(MediaAttachment(message: try stanza("<message from='a@x/r'><x xmlns='jabber:x:oob'><url>javascript:alert(1)</url></x></message>")) == nil)
        let long = "https://up.x/" + String(repeating: "a", count: 5000)
        #expect(MediaAttachment(message: try stanza("<message from='a@x/r'><body>\(long)</body></message>")) == nil)
    }

    @Test func claimsThatCannotBeTrueAreDropped() throws {
        let message = try stanza("""
            <message from='a@x/r'><x xmlns='jabber:x:oob'><url>https://up.x/5/a.bin</url></x>\
            <file xmlns='urn:xmpp:file:metadata:0'><name>\u{9B}31mred\n.exe</name><size>-5</size><media-type>nonsense</media-type>\
            <hash xmlns='urn:xmpp:hashes:2' algo='sha-256'>c2hvcnQ=</hash><width>0</width></file></message>
            """)
        let media = try #require(MediaAttachment(message: message))
        // No control character (U+009B starts an escape sequence on a terminal), no negative size, no type without a
        // slash, no hash of the wrong length, no zero width.
        #expect(media.name == "31mred.exe" && media.size == nil && media.mediaType == nil && media.sha256 == nil && media.width == nil)
        #expect(ChatClient.safeFileName("../../etc/passwd") == "_.._etc_passwd")
        #expect(ChatClient.safeFileName("...") == "file")
    }

    @Test func sizesReadAsPeopleReadThem() {
        #expect(ByteCountFormat.format(999) == "999 B")
        #expect(ByteCountFormat.format(1_200_000) == "1.2 MB")
        #expect(ByteCountFormat.format(25_000_000) == "25 MB")
        #expect(ByteCountFormat.format(3_000_000_000) == "3.0 GB")
    }
}
