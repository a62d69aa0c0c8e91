import Foundation
import ParleyCore
import _NIOFileSystem

/// Sending a file (XEP-0363): find the upload service, ask it for a slot, PUT the file there,
/// then send the message: body = the GET URL, an XEP-0066 link, and the XEP-0446 metadata
/// (name, size, media type, SHA-256, image dimensions).
extension ChatClient {
    /// What `sendFile` sent.
    public struct SentFile: Sendable, Equatable {
        /// The message's id (what `.sent` and receipts name).
        public var messageID: String
        public var media: MediaAttachment
    }

    /// How often an upload starts over after its connection was lost before giving up.
    static let uploadAttempts = 3

    /// Uploads the file at `path` and sends it to `recipient` in a message of `type` ("chat"
    /// to a contact, "groupchat" to a room). Progress arrives as `.transferProgress` events
    /// and, awaited, on `progress`.
    ///
    /// If the connection to the server drops while the file is on its way, the upload starts
    /// over with a new slot once the client is connected again; the message goes out once,
    /// after a complete upload.
    @discardableResult
    public func sendFile(
        _ path: String, to recipient: JID, type: String = "chat", mediaType: String? = nil,
        progress: (@Sendable (TransferProgress) async -> Void)? = nil
    ) async throws -> SentFile {
        if type == "groupchat", muc.rooms[recipient.bare]?.inRoom != true { throw ClientError.notInRoom(recipient.bare) }
        let (size, header) = try await Self.inspect(path)
        let image = ImageInfo(header)
        let name = String(((path as NSString).lastPathComponent).prefix(MediaAttachment.maxNameLength))
        let contentType = mediaType ?? image?.type ?? MediaTypes.guess(forName: name) ?? "application/octet-stream"
        let id = UUID().uuidString
        let reporter = ProgressReporter(
            template: TransferProgress(direction: .upload, transferID: id, name: name, completedBytes: 0, totalBytes: size),
            emit: { [xmpp] event in await xmpp.emit(.transferProgress(event)) }, handler: progress)
        var attempt = 0
        while true {
            attempt += 1
            try Task.checkCancellation()
            try await xmpp.connect()
            let lostBefore = await xmpp.connectionsLost
            let service = try await discoverUploadService()
            if let max = service.maxFileSize, size > max { throw ClientError.fileTooLarge(size: size, max: max) }
            let slot: UploadSlotGrant
            do {
                slot = try UploadSlotGrant(result: try await xmpp.request(
                    UploadSlotGrant.request(filename: name, size: size, contentType: contentType, to: service.jid)))
            } catch let error as StanzaError {
                throw UploadSlotGrant.clientError(error, size: size)
            } catch ClientError.disconnected where attempt < Self.uploadAttempts {
                continue
            }
            await reporter.restart()
            let tls = HTTPTransfer.tlsConfiguration(alsoTrusting: xmpp.configuration.httpTrustedCertificateFile)
            let outcome = await Self.race(watching: xmpp, lostBefore: lostBefore) {
                try await HTTPTransfer.put(
                    file: path, size: size, to: slot.putURL, contentType: contentType, headers: slot.headers, tls: tls,
                    report: { await reporter.report($0) })
            }
            // A slot belongs to the session that asked for it: an upload the connection
            // dropped under goes again, even if its PUT got through, so the message always
            // names a file whose whole journey happened in one session.
            let survived = await xmpp.connectionsLost == lostBefore
            try Task.checkCancellation()
            switch outcome {
            case .finished where !survived && attempt < Self.uploadAttempts:
                logger.info("connection lost during the upload; starting over", metadata: ["file": "\(name)"])
                continue
            case .finished(let sha256):
                let media = MediaAttachment(
                    url: slot.getURL, name: name, size: size, mediaType: contentType, sha256: Base64.encode(sha256),
                    width: image?.width, height: image?.height)
                await sendMediaMessage(to: recipient, type: type, id: id, media: media)
                return SentFile(messageID: id, media: media)
            case .interrupted where attempt < Self.uploadAttempts:
                logger.info("upload interrupted by a lost connection; starting over", metadata: ["file": "\(name)"])
                continue
            case .interrupted:
                throw ClientError.transferFailed("the connection was lost during each of \(attempt) attempts to upload \(name)")
            case .failed(let error):
                // A transfer that failed with the connection is tried again; a refusal is final.
                if case ClientError.transferFailed = error, attempt < Self.uploadAttempts,
                    await connectionDropped(since: lostBefore)
                {
                    continue
                }
                throw error
            }
        }
    }

    /// Whether the XMPP connection was lost, waiting a little: when the server goes away,
    /// the HTTP transfer may notice before the XMPP stream does.
    private func connectionDropped(since lostBefore: Int) async -> Bool {
        for _ in 0..<40 {
            if await xmpp.connectionsLost != lostBefore { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// The message, kept in the cache first (for a chat) so a later run sends it again if no
    /// server acknowledged it.
    private func sendMediaMessage(to recipient: JID, type: String, id: String, media: MediaAttachment) async {
        if type == "groupchat" {
            // As `sendRoomMessage`: the room's echo confirms it and is no news.
            let room = recipient.bare
            _ = muc.rooms[room]?.remember(id)
            let record = MessageRecord(
                peer: room, direction: .outgoing, id: id, originID: id, body: media.url, timestamp: Date(), media: media)
            let nick = muc.rooms[room]?.nick ?? ""
            await persist { _ = try await $0.storeRoomMessage(record, nick: nick) }
        } else if type == "chat" {
            let record = MessageRecord(
                peer: recipient.bare, direction: .outgoing, id: id, originID: id, body: media.url, timestamp: Date(), media: media)
            await persist { _ = try await $0.store(record) }
        }
        await send(Self.mediaMessage(to: recipient, type: type, id: id, media: media))
    }

    static func mediaMessage(to recipient: JID, type: String, id: String, media: MediaAttachment) -> XMLElement {
        var message: XMLElement
        if type == "chat" {
            message = chatMessage(to: recipient, id: id, body: media.url)
        } else {
            message = XMLElement("message", namespace: XMLNamespace.client, ["to": recipient.description, "type": type, "id": id])
            message.append(XMLElement("body", text: media.url))
            message.append(XMLElement("origin-id", namespace: XMLNamespace.stanzaID, ["id": id]))
        }
        message.append(media.outOfBandElement)
        message.append(media.metadataElement)
        return message
    }

    /// XEP-0363 §3: the server itself, then each of its disco items, until one lists the
    /// upload feature. Remembered for the client's lifetime.
    func discoverUploadService() async throws -> UploadServiceInfo {
        if let uploadService { return uploadService }
        let domain = ownBareJID.domainpart
        var candidates = [domain]
        let items = try await xmpp.request(XMLElement(
            "iq", namespace: XMLNamespace.client, ["type": "get", "to": domain], [XMLElement("query", namespace: XMLNamespace.discoItems)]))
        candidates += items.firstChild("query", namespace: XMLNamespace.discoItems)?.children("item")
            .filter { $0[attribute: "node"] == nil }.compactMap { $0[attribute: "jid"] } ?? []
        for candidate in candidates {
            let info: XMLElement
            do {
                info = try await xmpp.request(XMLElement(
                    "iq", namespace: XMLNamespace.client, ["type": "get", "to": candidate],
                    [XMLElement("query", namespace: XMLNamespace.discoInfo)]))
            } catch is StanzaError {
                continue  // an item that does not answer disco is not the upload service
            }
            if let query = info.firstChild("query", namespace: XMLNamespace.discoInfo),
                let service = UploadServiceInfo(jid: candidate, info: query)
            {
                uploadService = service
                return service
            }
        }
        throw ClientError.noUploadService(domain)
    }

    /// The file's size and first bytes (enough for `ImageInfo`), or why it cannot be sent.
    static func inspect(_ path: String) async throws -> (size: Int64, header: [UInt8]) {
        do {
            return try await FileSystem.shared.withFileHandle(forReadingAt: FilePath(path)) { handle in
                let info = try await handle.info()
                guard info.type == .regular else { throw ClientError.fileUnavailable("\(path) is not a regular file") }
                guard info.size > 0 else { throw ClientError.fileUnavailable("\(path) is empty") }
                let header = try await handle.readChunk(fromAbsoluteOffset: 0, length: .bytes(min(info.size, 64 << 10)))
                return (info.size, Array(header.readableBytesView))
            }
        } catch let error as ClientError {
            throw error
        } catch {
            throw ClientError.fileUnavailable("cannot read \(path): \(error)")
        }
    }

    enum TransferOutcome<Value: Sendable>: Sendable {
        case finished(Value)
        /// The XMPP connection dropped while it ran; it was cancelled.
        case interrupted
        case failed(any Error)
    }

    /// Runs `work` until it ends or the client loses its connection, whichever is first.
    static func race<Value: Sendable>(
        watching xmpp: XMPPClient, lostBefore: Int, _ work: @escaping @Sendable () async throws -> Value
    ) async -> TransferOutcome<Value> {
        await withTaskGroup(of: TransferOutcome<Value>?.self) { group in
            group.addTask {
                do {
                    return .finished(try await work())
                } catch {
                    return Task.isCancelled ? nil : .failed(error)
                }
            }
            group.addTask {
                while !Task.isCancelled {
                    if await xmpp.connectionsLost != lostBefore { return .interrupted }
                    try? await Task.sleep(for: .milliseconds(50))
                }
                return nil
            }
            var outcome: TransferOutcome<Value> = .interrupted
            for await result in group {
                if let result {
                    outcome = result
                    break
                }
            }
            group.cancelAll()
            return outcome
        }
    }
}
