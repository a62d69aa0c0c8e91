import ArgumentParser
import Foundation
import ParleyClient
import ParleyCore

/// `parley chat`: an interactive session. Events print as they happen; lines starting with
/// `/` are commands; other lines go to the contact chosen with `/to`.
struct Chat: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Interactive chat (the default command).")
    @OptionGroup var account: AccountOptions
    @Option(help: "Start talking to this contact.") var to: String?

    static let help = """
        /add JID [message]   ask JID to be friends        /accept JID   /decline JID   /remove JID
        /roster              list contacts                /chats        conversations with unread counts
        /to JID              talk to JID                  /history JID  recent messages with JID
        /recall              take back your last message to the current contact
        /status [available|away|dnd|xa] [text]
        /nick NAME           your nickname                /whois JID    name, vCard, avatar, last seen, devices
        /avatar set FILE     your picture (PNG, JPEG…)    /avatar get JID [FILE]   save JID's picture
        /bookmarks [add ROOM [name] | remove ROOM]        group chats you keep
        \(RoomCommands.help)
        \(MediaCommands.help)
        /quit                /help
        Any other line is sent to the contact chosen with /to.
        """

    func run() async throws {
        let (configuration, cachePath) = try account.resolve(reconnect: true)
        let client: ChatClient
        do {
            client = try ChatClient(configuration: configuration, cachePath: cachePath, logger: account.logger)
        } catch {
            throw CLIError(error, account: configuration.jid)
        }
        let me = configuration.jid.bare
        let shelf = MediaShelf()
        let printer = Task {
            var progress = DeliveryProgress()
            for await event in client.events {
                // The server echoes our own presence back; the user knows it already.
                if case .presence(let update) = event, update.from.bare == me { continue }
                guard progress.isNews(event) else { continue }
                if case .room(let roomEvent) = event {
                    let ownNick = await client.nick(in: roomEvent.room)
                    var line = await MediaCommands.roomLine(for: roomEvent, ownNick: ownNick, shelf: shelf)
                    if line == nil { line = RoomFormat.line(for: roomEvent, ownNick: ownNick) }
                    if let line { print(line) }
                    continue
                }
                var line = await MediaCommands.line(for: event, me: me, shelf: shelf)
                if line == nil { line = await MessageFormat.line(for: event, me: me) { id in try? await client.storedMessage(id: id) } }
                if let line { print(line) }
            }
        }
        defer { printer.cancel() }
        do {
            try await client.connect()
        } catch {
            // Give the printer a moment to show the event behind the failure first.
            try? await Task.sleep(for: .milliseconds(50))
            throw CLIError(error, account: configuration.jid)
        }
        var session = ChatSession(client: client, current: try to.map(parseJID), media: shelf)
        print(Terminal.paint("type /help for commands", .gray))
        for await line in StandardInput.lines() {
            if try await !session.handle(line) { break }
        }
        await client.disconnect()
    }
}

/// Reads stdin on its own thread: a blocking read must not hold one of the few threads of
/// the concurrency pool (or an event loop).
enum StandardInput {
    static func lines() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let thread = Thread {
            while let line = readLine() { continuation.yield(line) }
            continuation.finish()
        }
        thread.start()
        return stream
    }
}
