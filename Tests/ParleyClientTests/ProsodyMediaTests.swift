import Foundation
import ParleyClient
import ParleyCore
import Testing

/// The client's media messages against another server's XEP-0363 service: Prosody 0.12's
/// mod_http_file_share (plain HTTP on loopback, a Bearer token in the slot's headers).
@Suite(.sharedProsody) struct ProsodyMediaTests {
    @Test func aFileUploadedToProsodysFileShareComesBackIdentical() async throws {
        let (olivia, oliviaEvents) = try SharedProsody.client("olivia")
        let (peggy, peggyEvents) = try SharedProsody.client("peggy")
        try await olivia.connect()
        try await peggy.connect()
        let picture = samplePNG(width: 32, height: 16, extra: 150_000)
        let path = try temporaryFile("prosody picture.png", picture)

        let sent = try await olivia.sendFile(path, to: jid("peggy"))
        #expect(sent.media.url.hasPrefix("http://localhost:") && sent.media.url.contains("/file_share/"), "\(sent.media.url)")
        #expect(sent.media.width == 32 && sent.media.height == 16)
        _ = try await oliviaEvents.next("upload complete") {
            if case .transferProgress(let p) = $0 { p.isComplete && p.direction == .upload } else { false }
        }
        let event = try await peggyEvents.next("the media message") { if case .message(let m) = $0 { m.media != nil } else { false } }
        guard case .message(let message) = event, let media = message.media else { return }
        #expect(media == sent.media)
        let local = try await peggy.download(media)
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: local))) == picture)

        // Prosody's own limit (1 MB here), read from its disco#info form.
        let big = try temporaryFile("big.bin", Array(repeating: 1, count: 1_000_001))
        await #expect(throws: ClientError.fileTooLarge(size: 1_000_001, max: 1_000_000)) { try await olivia.sendFile(big, to: jid("peggy")) }
        await olivia.disconnect()
        await peggy.disconnect()
    }
}
