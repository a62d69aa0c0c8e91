import Foundation
import ParleyCore
import _NIOFileSystem

/// Receiving a file: download a media message's attachment into the media directory,
/// checking it is what the sender described (size, SHA-256) before it is kept.
extension ChatClient {
    /// Downloads without a size from the sender stop at this many bytes.
    public static let defaultDownloadLimit: Int64 = 1 << 30

    /// Where downloads go: next to the cache file (`<cache>-media/`), or a temporary directory
    /// for a client without a cache.
    public nonisolated var mediaDirectory: String {
        if let cache { return (cache.database.path as NSString).deletingPathExtension + "-media" }
        return NSTemporaryDirectory() + "parley-media-" + ownBareJID.description
    }

    /// Where `media` is (or will be) once downloaded: a folder per URL, holding the file
    /// under a name made safe from the sender's.
    public nonisolated func localPath(for media: MediaAttachment) -> String {
        let folder = ((try? HashFunction.sha256.digest(Array(media.url.utf8))) ?? []).prefix(12).map { String(format: "%02x", $0) }.joined()
        return "\(mediaDirectory)/\(folder)/\(Self.safeFileName(media.name))"
    }

    /// A name the file system takes as one plain file in the folder: no separators, no
    /// control characters, no leading dot, at most 200 bytes.
    static func safeFileName(_ name: String) -> String {
        var cleaned = String(name.unicodeScalars.map { scalar -> Character in
            scalar == "/" || scalar == "\\" || scalar.properties.generalCategory == .control ? "_" : Character(scalar)
        })
        while cleaned.hasPrefix(".") { cleaned.removeFirst() }
        while cleaned.utf8.count > 200 { cleaned.removeFirst() }
        return cleaned.isEmpty ? "file" : cleaned
    }

    /// Downloads `media` (unless it is already there, complete) and returns its local path.
    /// A file whose size or SHA-256 differs from what the message said is removed and
    /// reported as `ClientError.downloadMismatch`.
    @discardableResult
    public func download(
        _ media: MediaAttachment, limit: Int64 = ChatClient.defaultDownloadLimit,
        progress: (@Sendable (TransferProgress) async -> Void)? = nil
    ) async throws -> String {
        let path = localPath(for: media)
        if let existing = try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber,
            media.size == nil || existing.int64Value == media.size
        {
            return path
        }
        let folder = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw ClientError.fileUnavailable("cannot create \(folder): \(error.localizedDescription)")
        }
        let reporter = ProgressReporter(
            template: TransferProgress(direction: .download, transferID: media.url, name: media.name, completedBytes: 0, totalBytes: media.size),
            emit: { [xmpp] event in await xmpp.emit(.transferProgress(event)) }, handler: progress)
        let partial = path + ".part"
        do {
            let (size, digest) = try await HTTPTransfer.get(
                media.url, to: partial, limit: media.size ?? limit,
                tls: HTTPTransfer.tlsConfiguration(alsoTrusting: xmpp.configuration.httpTrustedCertificateFile)
            ) { count, total in await reporter.report(count, total: media.size == nil ? total : nil) }
            if let expected = media.size, size != expected {
                throw ClientError.downloadMismatch("\(media.name) is \(size) bytes, but the message said \(expected)")
            }
            if let expected = media.sha256, Base64.encode(digest) != expected {
                throw ClientError.downloadMismatch("the SHA-256 of \(media.name) is \(Base64.encode(digest)), but the message said \(expected)")
            }
            // An earlier, incomplete copy makes way.
            _ = try? await FileSystem.shared.removeItem(at: FilePath(path), strategy: .platformDefault, recursively: false)
            try await FileSystem.shared.moveItem(at: FilePath(partial), to: FilePath(path))
        } catch {
            _ = try? await FileSystem.shared.removeItem(at: FilePath(partial), strategy: .platformDefault, recursively: false)
            if let error = error as? ClientError { throw error }
            throw ClientError.fileUnavailable("cannot keep \(media.name) at \(path): \(error)")
        }
        return path
    }
}
