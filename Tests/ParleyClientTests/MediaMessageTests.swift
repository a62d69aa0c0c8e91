import Foundation
import ParleyCore
import ParleyTestSupport
import Synchronization
import Testing

@testable import ParleyClient

/// Files in chats end to end against a real parleyd with its XEP-0363 service over HTTPS:
/// the sender's client finds the service, uploads, and sends the link with its metadata; the
/// recipient's client recognises the media message and downloads the same bytes, checked.
@Suite struct MediaMessageTests {
    @Test func aPictureSentToAContactArrivesAndDownloadsByteForByte() async throws {
        try await UploadTestServer.with { server in
            try await server.server.createAccount("alice")
            try await server.server.createAccount("bob")
            let (alice, aliceEvents) = try server.client("alice")
            let (bob, bobEvents) = try server.client("bob")
            try await alice.connect()
            try await bob.connect()
            let picture = samplePNG(width: 640, height: 480, extra: 300_000)
            let path = try temporaryFile("holiday photo.png", picture)
            let uploads = ProgressLog()

            let sent = try await alice.sendFile(path, to: jid("bob")) { uploads.append($0) }
            #expect(sent.media.name == "holiday photo.png" && sent.media.size == Int64(picture.count))
            #expect(sent.media.mediaType == "image/png" && sent.media.width == 640 && sent.media.height == 480)
            #expect(sent.media.sha256 == Base64.encode(try HashFunction.sha256.digest(picture)))
            #expect(sent.media.url.hasPrefix("https://localhost:"), "\(sent.media.url)")
            // The handler saw every chunk; the events at most one per percent, ending complete.
            #expect(uploads.all.count >= picture.count / (64 << 10) && uploads.all.last?.completedBytes == Int64(picture.count))
            #expect(uploads.all.map(\.completedBytes) == uploads.all.map(\.completedBytes).sorted())
            let uploadEvent = try await aliceEvents.next("upload complete") {
                if case .transferProgress(let p) = $0 { p.direction == .upload && p.isComplete } else { false }
            }
            #expect(uploadEvent == .transferProgress(TransferProgress(
                direction: .upload, transferID: sent.messageID, name: "holiday photo.png", completedBytes: Int64(picture.count),
                totalBytes: Int64(picture.count))))

            let event = try await bobEvents.next("the media message") { if case .message(let m) = $0 { m.media != nil } else { false } }
            guard case .message(let message) = event, let media = message.media else { return }
            #expect(message.body == sent.media.url && media == sent.media)
            #expect(media.kind == .image)

            let downloads = ProgressLog()
            let local = try await bob.download(media) { downloads.append($0) }
            #expect(try Array(Data(contentsOf: URL(fileURLWithPath: local))) == picture)
            #expect(local.hasPrefix(bob.mediaDirectory) && local.hasSuffix("/holiday photo.png"))
            #expect(downloads.all.last?.completedBytes == Int64(picture.count) && downloads.all.last?.direction == .download)
            // Already there: not fetched again.
            #expect(try await bob.download(media) { downloads.append($0) } == local)
            #expect(downloads.all.last?.completedBytes == Int64(picture.count))

            // Both caches keep it as a media message.
            let history = try await bob.history(with: jid("alice"))
            #expect(history.last?.media == sent.media)
            #expect(try await alice.history(with: jid("bob")).last?.media == sent.media)
            await alice.disconnect()
            await bob.disconnect()
        }
    }

    @Test func theOutgoingMediaMessageMatchesTheSchemas() throws {
        let media = MediaAttachment(
            url: "https://upload.example.org/a1/photo.jpg", name: "photo.jpg", size: 1_234_567, mediaType: "image/jpeg",
            sha256: Base64.encode(try HashFunction.sha256.digest(Array("x".utf8))), width: 800, height: 600)
        let message = ChatClient.mediaMessage(to: jid("bob"), type: "chat", id: "m1", media: media)
        try SchemaValidator.shared.validate(message.xmlString())
        let room = ChatClient.mediaMessage(to: try JID("room@conference.localhost"), type: "groupchat", id: "m2", media: media)
        try SchemaValidator.shared.validate(room.xmlString())
        #expect(room.type == "groupchat" && room.firstChild("request") == nil)
        // What is sent is what is read back.
        #expect(MediaAttachment(message: message.settingFrom("alice@localhost/a")) == media)
        // A negative size would not validate (and is not what the client sends).
        let broken = message.xmlString().replacingOccurrences(of: "<size>1234567</size>", with: "<size>-1</size>")
        #expect(throws: SchemaValidator.Failure.self) { try SchemaValidator.shared.validate(broken) }
    }

    @Test func aFileSentToARoomGoesAsGroupchatAndArrivesAsARoomMediaMessage() async throws {
        try await UploadTestServer.with(rooms: true) { server in
            for user in ["ivan", "judy", "kim"] { try await server.server.createAccount(user) }
            let (ivan, ivanEvents) = try server.client("ivan")
            let (judy, judyEvents) = try server.client("judy")
            let (kim, kimEvents) = try server.client("kim")
            let seen = StanzaLog()
            await ivan.xmpp.addStanzaHandler { seen.append($0) }
            for client in [ivan, judy, kim] { try await client.connect() }
            let room = try JID("lounge@conference.localhost")
            let path = try temporaryFile("slides.pdf", Array(repeating: 0x25, count: 70_000))
            // Not in the room yet: refused before anything is uploaded.
            await #expect(throws: ClientError.self) { try await ivan.sendFile(path, to: room, type: "groupchat") }

            _ = try await ivan.join(room, nick: "ivan")
            _ = try await judy.join(room, nick: "judy")
            _ = try await kim.join(room, nick: "kim")
            let sent = try await ivan.sendFile(path, to: room, type: "groupchat")
            #expect(sent.media.mediaType == "application/pdf" && sent.media.kind == .file)
            try await eventually("the room sent the file back") {
                seen.all.contains { $0.name == "message" && $0.type == "groupchat" && $0.firstChild("x", namespace: MediaNamespace.outOfBand) != nil }
            }
            let reflected = try #require(seen.all.last { $0.name == "message" && $0.type == "groupchat" })
            #expect(reflected.from == "\(room)/ivan" && reflected.firstChild("body")?.text == sent.media.url)
            #expect(MediaAttachment(message: reflected) == sent.media)

            // The others' clients see a room message with the same media as a 1:1 message has.
            for events in [judyEvents, kimEvents] {
                let message = try await Rooms.message(events, sent.media.url)
                #expect(message.media == sent.media && message.nick == "ivan" && !message.isOwn, "\(message)")
            }
            // The sender's echo is a confirmation, not news; its cache keeps the media.
            try await ivanEvents.next("the room's echo of the file") { $0 == .sent(messageID: sent.messageID) }
            #expect(Rooms.bodies(ivanEvents, in: room).isEmpty)
            #expect(try await ivan.history(with: room).last?.media == sent.media)
            #expect(try await judy.history(with: room).last?.media == sent.media)

            // A private message carrying a file is a media message too.
            let link = MediaAttachment(url: "https://localhost/f/notes.txt", name: "notes.txt", size: 12, mediaType: "text/plain")
            var pm = ChatClient.mediaMessage(to: try JID("\(room)/judy"), type: "chat", id: "pm-file", media: link)
            pm.append(XMLElement("x", namespace: "http://jabber.org/protocol/muc#user"))
            await kim.xmpp.send(pm)
            let event = try await Rooms.next(judyEvents, "the private file") {
                if case .privateMessage(let message) = $0 { message.id == "pm-file" } else { false }
            }
            guard case .privateMessage(let message) = event else { return }
            #expect(message.media == link && message.nick == "kim")
            for client in [ivan, judy, kim] { await client.disconnect() }
        }
    }

    @Test func aMediaMessageTheLastRunLeftUnacknowledgedGoesAgainWithItsMetadata() async throws {
        try await UploadTestServer.with { server in
            try await server.server.createAccount("judy")
            try await server.server.createAccount("kim")
            // What sendFile keeps before sending, as a run that ended before the server's
            // acknowledgement left it.
            let cachePath = server.server.directory + "/clients/judy-previous-run.sqlite"
            let media = MediaAttachment(
                url: "https://localhost/x/y/map.png", name: "map.png", size: 1234, mediaType: "image/png",
                sha256: Base64.encode(try HashFunction.sha256.digest(Array("map".utf8))), width: 10, height: 20)
            let earlier = try ChatCache(path: cachePath)
            #expect(try await earlier.store(MessageRecord(
                peer: jid("kim"), direction: .outgoing, id: "m-1", originID: "m-1", body: media.url, timestamp: Date(), media: media)))
            let (kim, kimEvents) = try server.client("kim")
            try await kim.connect()
            var configuration = try server.server.configuration(for: "judy")
            configuration.httpTrustedCertificateFile = server.server.running.certificatePath
            let judy = try ChatClient(configuration: configuration, cachePath: cachePath, logger: quietLogger("client.judy"))
            try await judy.connect()
            let event = try await kimEvents.next("the media message") { if case .message(let m) = $0 { m.id == "m-1" } else { false } }
            guard case .message(let message) = event else { return }
            #expect(message.media == media && message.body == media.url)
            try await judy.settle()
            #expect(try await judy.storedMessage(id: "m-1")?.state == .sent)
            await judy.disconnect()
            await kim.disconnect()
        }
    }

    @Test func aFileWhoseHashDiffersIsRemovedWithAClearError() async throws {
        try await UploadTestServer.with { server in
            try await server.server.createAccount("carol")
            let (carol, _) = try server.client("carol")
            try await carol.connect()
            let bytes = Array(repeating: UInt8(0x41), count: 200_000)
            let sent = try await carol.sendFile(try temporaryFile("notes.txt", bytes), to: jid("dave"))
            #expect(sent.media.mediaType == "text/plain" && sent.media.kind == .file)

            var forged = sent.media
            forged.sha256 = Base64.encode(try HashFunction.sha256.digest(Array("something else".utf8)))
            await #expect(throws: ClientError.self) { try await carol.download(forged) }
            do {
                try await carol.download(forged)
            } catch ClientError.downloadMismatch(let reason) {
                #expect(reason.contains("SHA-256") && reason.contains(forged.sha256!), "\(reason)")
            }
            let local = carol.localPath(for: forged)
            #expect(!FileManager.default.fileExists(atPath: local) && !FileManager.default.fileExists(atPath: local + ".part"))

            var wrongSize = sent.media
            wrongSize.size = 100_000
            do {
                try await carol.download(wrongSize)
                Issue.record("a file larger than announced was kept")
            } catch ClientError.downloadMismatch(let reason) {
                #expect(reason.contains("100000"), "\(reason)")
            }
            #expect(!FileManager.default.fileExists(atPath: carol.localPath(for: wrongSize)))
            // The true description downloads fine.
            #expect(try Array(Data(contentsOf: URL(fileURLWithPath: try await carol.download(sent.media)))) == bytes)
            await carol.disconnect()
        }
    }

    @Test func aFileOverTheServersLimitIsRefusedWithTheLimit() async throws {
        try await UploadTestServer.with(maxFileSize: 1_000) { server in
            try await server.server.createAccount("erin")
            let (erin, erinEvents) = try server.client("erin")
            try await erin.connect()
            let path = try temporaryFile("big.bin", Array(repeating: 7, count: 5_000))
            await #expect(throws: ClientError.fileTooLarge(size: 5_000, max: 1_000)) { try await erin.sendFile(path, to: jid("frank")) }
            #expect("\(ClientError.fileTooLarge(size: 5_000, max: 1_000))".contains("at most 1.0 kB (1000 bytes)"))
            #expect(server.storedFiles().isEmpty)
            #expect(!erinEvents.all.contains { if case .transferProgress = $0 { true } else { false } })
            // A file that is not there is the caller's mistake, said as such.
            do {
                try await erin.sendFile(path + ".missing", to: jid("frank"))
                Issue.record("a missing file was sent")
            } catch ClientError.fileUnavailable(let reason) {
                #expect(reason.contains(path + ".missing"))
            }
            await erin.disconnect()
        }
    }

    @Test func theServicesRefusalsBecomeClientErrors() throws {
        let tooLarge = StanzaError(
            .notAcceptable, type: .modify, text: "The file is larger than the 10 bytes allowed.",
            applicationCondition: XMLElement("file-too-large", namespace: MediaNamespace.httpUpload, [:], [
                XMLElement("max-file-size", namespace: MediaNamespace.httpUpload, text: "10")
            ]))
        #expect(UploadSlotGrant.clientError(tooLarge, size: 20) == .fileTooLarge(size: 20, max: 10))
        #expect(UploadSlotGrant.clientError(StanzaError(.notAllowed, text: "Only locals."), size: 1) == .uploadNotAllowed("Only locals."))
        let retry = XMLElement("retry", namespace: MediaNamespace.httpUpload, ["stamp": "2030-01-02T03:04:05Z"])
        let quota = UploadSlotGrant.clientError(StanzaError(.resourceConstraint, type: .wait, text: "Daily quota", applicationCondition: retry), size: 1)
        #expect(quota == .uploadQuotaExceeded("Daily quota", retryAfter: IncomingMessage.parseStamp("2030-01-02T03:04:05Z")))
        #expect("\(quota)".contains("2030-01-02T03:04:05Z"))
        #expect(UploadSlotGrant.clientError(StanzaError(.badRequest), size: 1) == .uploadRefused(StanzaError(.badRequest)))
        #expect("\(ClientError.httpStatus(413, reason: "too big", url: "https://x/y"))" == "HTTP 413 from https://x/y: too big")
    }

    @Test func aReconnectDuringTheUploadStartsOverWithANewSlotAndSendsOnce() async throws {
        try await UploadTestServer.with { server in
            try await server.server.createAccount("grace")
            try await server.server.createAccount("heidi")
            let (grace, graceEvents) = try server.client("grace")
            let (heidi, heidiEvents) = try server.client("heidi")
            try await grace.connect()
            try await heidi.connect()
            let bytes = (0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let path = try temporaryFile("voice.ogg", bytes)
            let cut = Flag()
            let restarts = ProgressLog()
            let sent = try await grace.sendFile(path, to: jid("heidi")) { progress in
                restarts.append(progress)
                // Halfway through the first attempt the connection drops; the PUT waits for
                // this handler, so it is still under way when the client notices.
                guard progress.completedBytes >= 500_000, cut.set() else { return }
                await grace.xmpp.cutConnection()
                try? await eventually("grace noticed") { await grace.xmpp.connectionsLost == 1 }
            }
            #expect(cut.isSet)
            // Two attempts: the counts went back to the start once.
            let starts = zip(restarts.all, restarts.all.dropFirst()).filter { $1.completedBytes < $0.completedBytes }.count
            #expect(starts == 1, "\(restarts.all.map(\.completedBytes))")
            _ = try await graceEvents.next("reconnected") { if case .resumed = $0 { true } else if case .connected = $0 { true } else { false } }

            let event = try await heidiEvents.next("the media message") { if case .message(let m) = $0 { m.media != nil } else { false } }
            guard case .message(let message) = event else { return }
            #expect(message.media == sent.media && message.media?.kind == .audio)
            #expect(try Array(Data(contentsOf: URL(fileURLWithPath: try await heidi.download(sent.media)))) == bytes)
            // Exactly one message, naming the second upload.
            try await grace.settle()
            try await heidi.settle()
            let received = heidiEvents.all.filter { if case .message = $0 { true } else { false } }
            #expect(received.count == 1, "\(received)")
            #expect(server.storedFiles().count <= 2, "\(server.storedFiles())")
            await grace.disconnect()
            await heidi.disconnect()
        }
    }
}

/// Set once; `set()` says whether this call set it.
final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() -> Bool { value.withLock { was in defer { was = true }; return !was } }
}

extension XMPPClient {
    /// Drops the connection as a network failure would (no closing handshake).
    func cutConnection() {
        connection?.close()
    }
}

extension XMLElement {
    fileprivate func settingFrom(_ from: String) -> XMLElement {
        var copy = self
        copy.setAttribute("from", from)
        return copy
    }
}
