#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import Foundation
import ParleyClient
import ParleyCore

/// Files in the chat: `/send-file PATH`, `/download N`, `/open N`, and how media messages
/// look (`#3 [image photo.jpg 1.2 MB] https://…`, where 3 is what /download and /open take).
enum MediaCommands {
    static let help = """
        /send-file PATH      send a file to the current contact (XEP-0363 upload)
        /download N          save media message #N      /open N   download if needed, then open it
        """

    /// Runs one of the media commands; false if `command` is not one of them.
    static func handle(_ command: String, _ words: String?, session: ChatSession) async throws -> Bool {
        switch command {
        case "/send-file":
            guard let path = words.map(expandingTilde), !path.isEmpty else { throw CLIError("usage: /send-file PATH", .usage) }
            guard let current = session.current else { throw CLIError("choose who to talk to first: /to JID", .usage) }
            try? await session.client.markRead(current)
            let sent = try await sendFile(session.client, path, to: current)
            let number = await session.media.number(for: sent.media)
            print(Terminal.paint("sent #\(number) ", .gray) + label(sent.media) + " " + sent.media.url)
        case "/download", "/open":
            let usage = "usage: \(command) N (the # of a media message)"
            guard let text = words, let number = Int(text.trimmingCharacters(in: .whitespaces)) else { throw CLIError(usage, .usage) }
            guard let media = await session.media.attachment(number) else {
                throw CLIError("no media message #\(number) in this session", .usage)
            }
            let path = try await download(session.client, media)
            if command == "/download" {
                print(Terminal.paint("saved #\(number) to \(path)", .gray))
            } else {
                open(path)
            }
        default:
            return false
        }
        return true
    }

    static func sendFile(_ client: ChatClient, _ path: String, to recipient: JID) async throws -> ChatClient.SentFile {
        let bar = ProgressBar(verb: "uploading")
        // The current conversation may be a room we are in: the file goes to everyone there.
        let inRoom = await client.nick(in: recipient) != nil
        let type = recipient.isBare && inRoom ? "groupchat" : "chat"
        let sent = try await client.sendFile(path, to: recipient, type: type) { await bar.show($0) }
        await bar.finish()
        return sent
    }

    static func download(_ client: ChatClient, _ media: MediaAttachment) async throws -> String {
        let bar = ProgressBar(verb: "downloading")
        let path = try await client.download(media) { await bar.show($0) }
        await bar.finish()
        return path
    }

    /// xdg-open when there is one on PATH (it returns at once; the viewer runs on its own),
    /// else the path for the user to open.
    static func open(_ path: String) {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        guard let opener = directories.map({ "\($0)/xdg-open" }).first(where: FileManager.default.isExecutableFile(atPath:)) else {
            print("no xdg-open here; the file is at \(path)")
            return
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: opener)
        process.arguments = [path]
        do {
            try process.run()
            print(Terminal.paint("opening \(path)", .gray))
        } catch {
            print("cannot run xdg-open (\(error)); the file is at \(path)")
        }
    }

    private static func expandingTilde(_ path: String) -> String {
        let trimmed = path.trimmingCharacters(in: .whitespaces)
        return trimmed.hasPrefix("~/") ? NSHomeDirectory() + trimmed.dropFirst() : trimmed
    }

    // MARK: Display

    /// "[image photo.jpg 1.2 MB]": the kind comes from the media type.
    static func label(_ media: MediaAttachment) -> String {
        let size = media.size.map { " " + ByteCountFormat.format($0) } ?? ""
        return Terminal.paint("[\(media.kind.rawValue) \(media.name)\(size)]", .cyan)
    }

    /// The chat line for a media message event (numbered in `shelf`); nil for other events,
    /// which `MessageFormat` shows.
    static func line(for event: ClientEvent, me: JID, shelf: MediaShelf) async -> String? {
        guard case .message(let message) = event, let media = message.media else { return nil }
        let number = await shelf.number(for: media)
        let who: String
        if message.from.bare == me {
            who = Terminal.paint("me (another device)" + (message.to.map { " → \($0.bare)" } ?? ""), .blue)
        } else {
            who = Terminal.paint(message.from.bare.description, .green, bold: true)
        }
        let late = message.delayedUntil.map { Terminal.paint(" (sent \(MessageFormat.time($0)))", .gray) } ?? ""
        return "[\(MessageFormat.time(Date()))] \(who): #\(number) \(label(media)) \(media.url)\(late)"
    }

    /// The line for a room's media message (numbered in `shelf` like the others), in the
    /// room's format with the file's label in place of the bare URL; nil for other events.
    static func roomLine(for event: RoomEvent, ownNick: String?, shelf: MediaShelf) async -> String? {
        let shown: RoomEvent
        switch event {
        case .message(var message):
            guard let attachment = message.media else { return nil }
            message.body = "#\(await shelf.number(for: attachment)) \(label(attachment)) \(attachment.url)"
            message.mentionsMe = false
            shown = .message(message)
        case .privateMessage(var message):
            guard let attachment = message.media else { return nil }
            message.body = "#\(await shelf.number(for: attachment)) \(label(attachment)) \(attachment.url)"
            shown = .privateMessage(message)
        default:
            return nil
        }
        return RoomFormat.line(for: shown, ownNick: ownNick)
    }

    /// A history line for a media message; nil for others.
    static func historyLine(_ message: StoredMessage, shelf: MediaShelf) async -> String? {
        guard !message.retracted, let media = message.media else { return nil }
        let number = await shelf.number(for: media)
        let who = message.direction == .outgoing ? Terminal.paint("me", .blue) : Terminal.paint(message.peer.description, .green)
        let state = message.direction == .outgoing ? Terminal.paint("  \(MessageFormat.stateMark(message.state))", .gray) : ""
        return "[\(MessageFormat.time(message.timestamp))] \(who): #\(number) \(label(media)) \(media.url)\(state)"
    }
}

/// The media messages shown in this chat session, numbered from 1 in the order they were
/// first shown; the same file (by URL) keeps its number.
actor MediaShelf {
    private var attachments: [MediaAttachment] = []
    private var numbers: [String: Int] = [:]

    func number(for media: MediaAttachment) -> Int {
        if let number = numbers[media.url] { return number }
        attachments.append(media)
        numbers[media.url] = attachments.count
        return attachments.count
    }

    func attachment(_ number: Int) -> MediaAttachment? {
        attachments.indices.contains(number - 1) ? attachments[number - 1] : nil
    }
}

/// A transfer's progress: a bar redrawn in place on a terminal; elsewhere (a pipe, a log) a
/// line at each quarter.
actor ProgressBar {
    private let verb: String
    private var lastQuarter = -1
    private var last: TransferProgress?
    private let interactive = isatty(STDOUT_FILENO) == 1

    init(verb: String) {
        self.verb = verb
    }

    func show(_ progress: TransferProgress) {
        last = progress
        let fraction = progress.fraction ?? 0
        let amount = ByteCountFormat.format(progress.completedBytes) + (progress.totalBytes.map { " of " + ByteCountFormat.format($0) } ?? "")
        if interactive {
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            FileHandle.standardOutput.write(Data("\r\(verb) \(progress.name) [\(bar)] \(Int(fraction * 100))% \(amount)\u{1B}[K".utf8))
        } else {
            let quarter = Int(fraction * 4)
            guard quarter != lastQuarter else { return }
            lastQuarter = quarter
            print("\(verb) \(progress.name): \(quarter * 25)% (\(amount))")
            fflush(nil)
        }
    }

    func finish() {
        if interactive, last != nil { FileHandle.standardOutput.write(Data("\n".utf8)) }
    }
}

/// `parley send-file JID PATH`.
struct SendFile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send-file", abstract: "Upload a file (XEP-0363) and send it to a contact.")
    @OptionGroup var account: AccountOptions
    @Argument(help: "The recipient's JID.") var recipient: String
    @Argument(help: "The file.") var path: String

    func run() async throws {
        let recipient = try parseJID(recipient)
        let sent = try await account.withClient { try await MediaCommands.sendFile($0, path, to: recipient) }
        print("sent \(sent.messageID) \(MediaCommands.label(sent.media)) \(sent.media.url)")
    }
}
