import Foundation
import ParleyClient
import ParleyCore

/// The REPL's commands. Errors are printed and the session goes on.
struct ChatSession {
    let client: ChatClient
    var current: JID?
    /// The media messages shown, by number (see MediaCommands).
    var media = MediaShelf()

    /// Handles one line; false means quit.
    mutating func handle(_ line: String) async throws -> Bool {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return true }
        guard trimmed.hasPrefix("/") else {
            do {
                if try await RoomCommands.say(line, in: current, client: client) { return true }
            } catch {
                print(Terminal.paint("\(error)", .red))
                return true
            }
            guard let current else {
                print(Terminal.paint("choose who to talk to first: /to JID", .yellow))
                return true
            }
            // Answering means having read what they wrote.
            try? await client.markRead(current)
            await client.sendMessage(to: current, body: line)
            return true
        }
        let parts = trimmed.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true).map(String.init)
        let command = parts[0]
        let argument = parts.count > 1 ? parts[1] : nil
        let rest = parts.count > 2 ? parts[2] : nil
        do {
            switch command {
            case "/quit", "/exit":
                return false
            case "/help":
                print(Chat.help)
            case "/add":
                let jid = try jidArgument(argument, usage: "/add JID [message]")
                try await client.addContact(jid, message: rest)
                print(Terminal.paint("asked \(jid) to be friends", .gray))
            case "/accept":
                let jid = try jidArgument(argument, usage: "/accept JID")
                await client.accept(jid)
                print(Terminal.paint("accepted \(jid)", .gray))
            case "/decline":
                let jid = try jidArgument(argument, usage: "/decline JID")
                await client.decline(jid)
                print(Terminal.paint("declined \(jid)", .gray))
            case "/remove":
                let jid = try jidArgument(argument, usage: "/remove JID")
                try await client.removeContact(jid)
                print(Terminal.paint("removed \(jid)", .gray))
            case "/roster":
                let contacts = await client.contacts()
                let requests = await client.friendRequests()
                if contacts.isEmpty, requests.isEmpty { print(Terminal.paint("no contacts yet: /add JID", .gray)) }
                var names: [JID: String] = [:]
                for contact in contacts { names[contact.jid] = await client.displayName(for: contact.jid) }
                for line in RosterFormat.lines(contacts: contacts, requests: requests, displayName: { names[$0] ?? $0.description }, accept: "/accept") {
                    print(line)
                }
            case "/chats":
                for conversation in try await client.conversations() {
                    let unread = conversation.unreadCount > 0 ? Terminal.paint(" (\(conversation.unreadCount) unread)", .yellow) : ""
                    let last = conversation.lastMessage.map { ": \($0.body)" } ?? ""
                    let name = RosterFormat.named(conversation.peer, await client.displayName(for: conversation.peer))
                    print("\(name)\(unread)\(last)")
                }
            case "/avatar":
                let words = (rest ?? "").split(separator: " ", maxSplits: 1).map(String.init)
                switch argument {
                case "set":
                    guard let file = words.first else { throw CLIError("usage: /avatar set FILE", .usage) }
                    printLines(try await ProfileCommands.setAvatar(client, file: rest ?? file))
                case "get":
                    let jid = try jidArgument(words.first, usage: "/avatar get JID [FILE]")
                    printLines(try await ProfileCommands.getAvatar(client, of: jid, file: words.count > 1 ? words[1] : nil))
                default:
                    throw CLIError("usage: /avatar set FILE   or   /avatar get JID [FILE]", .usage)
                }
            case "/nick":
                let name = [argument, rest].compactMap { $0 }.joined(separator: " ")
                guard !name.isEmpty else { throw CLIError("usage: /nick NAME", .usage) }
                printLines(try await ProfileCommands.setNickname(client, name))
            case "/whois":
                let jid = try jidArgument(argument ?? current?.description, usage: "/whois JID")
                printLines(try await ProfileCommands.whois(client, jid))
            case "/bookmarks":
                let words = [argument].compactMap { $0 } + (rest ?? "").split(separator: " ").map(String.init)
                printLines(try await ProfileCommands.bookmarks(client, words))
            case "/to":
                let jid = try jidArgument(argument, usage: "/to JID")
                current = jid
                try await client.markRead(jid)
                print(Terminal.paint("talking to \(jid)", .gray))
            case "/history":
                let jid = try jidArgument(argument ?? current?.description, usage: "/history JID")
                for message in try await client.history(with: jid, limit: 30) {
                    print(await MediaCommands.historyLine(message, shelf: media) ?? MessageFormat.historyLine(message))
                }
                try await client.markRead(jid)
            case "/recall":
                guard let current else { throw CLIError("choose who to talk to first: /to JID", .usage) }
                let mine = try await client.history(with: current, limit: 100).last { $0.direction == .outgoing && !$0.retracted }
                guard let mine, let id = mine.id else { throw CLIError("you have no message to \(current) to recall", .usage) }
                await client.retract(messageID: id, sentTo: current)
            case "/status":
                let text = [rest].compactMap { $0 }.joined()
                if let argument, let show = PresenceUpdate.Show(rawValue: argument), show != .unavailable {
                    await client.setStatus(show, text: text.isEmpty ? nil : text)
                } else {
                    // No known keyword: all of it is the text, and we stay available.
                    let all = [argument, rest].compactMap { $0 }.joined(separator: " ")
                    await client.setStatus(.available, text: all.isEmpty ? nil : all)
                }
                print(Terminal.paint("status set", .gray))
            case "/send-file", "/download", "/open":
                _ = try await MediaCommands.handle(command, [argument, rest].compactMap { $0 }.joined(separator: " "), session: self)
            default:
                if try await RoomCommands.handle(command, argument, rest, client: client, current: &current) { break }
                print(Terminal.paint("unknown command \(command); /help lists them", .yellow))
            }
        } catch let error as CLIError {
            print(Terminal.paint(error.message, .red))
        } catch {
            print(Terminal.paint("\(error)", .red))
        }
        return true
    }

    private func printLines(_ lines: [String]) {
        for line in lines { print(line) }
    }

    private func jidArgument(_ text: String?, usage: String) throws -> JID {
        guard let text else { throw CLIError("usage: \(usage)", .usage) }
        return try parseJID(text)
    }
}
