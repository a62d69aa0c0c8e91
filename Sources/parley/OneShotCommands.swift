import ArgumentParser
import Foundation
import ParleyClient
import ParleyCore

/// Commands that sign in, do one thing, and sign out: for scripts (see the exit codes).

struct Register: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create the account on its server (in-band registration, XEP-0077).")
    @OptionGroup var account: AccountOptions

    func run() async throws {
        let (configuration, _) = try account.resolve(reconnect: false)
        do {
            try await XMPPClient.registerAccount(configuration: configuration)
        } catch {
            throw CLIError(error, account: configuration.jid)
        }
        print("registered \(configuration.jid.bare)")
    }
}

struct Send: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Send one message.")
    @OptionGroup var account: AccountOptions
    @Argument(help: "The recipient's JID.") var recipient: String
    @Argument(help: "The message.") var text: String

    func run() async throws {
        let recipient = try parseJID(recipient)
        let id = try await account.withClient { await $0.sendMessage(to: recipient, body: text) }
        print("sent \(id)")
    }
}

struct Roster: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List contacts, their subscription state, and friend requests waiting for an answer.")
    @OptionGroup var account: AccountOptions

    func run() async throws {
        // Available with a negative priority: the server then repeats the friend requests
        // waiting for an answer (RFC 6121 §3.1.3), but routes no messages here.
        let lines = try await account.withClient(online: true, priority: -1) { client in
            try await client.refreshRoster()
            try await client.settle()
            let contacts = await client.contacts()
            var names: [JID: String] = [:]
            for contact in contacts { names[contact.jid] = await client.displayName(for: contact.jid) }
            return RosterFormat.lines(
                contacts: contacts, requests: await client.friendRequests(), displayName: { names[$0] ?? $0.description },
                accept: "parley accept")
        }
        for line in lines { print(line) }
    }
}

struct Whois: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show a contact's names, vCard, avatar, last activity and devices.")
    @OptionGroup var account: AccountOptions
    @Argument(help: "The contact's JID.") var contact: String

    func run() async throws {
        let contact = try parseJID(contact)
        let lines = try await account.withClient(online: true, priority: -1) { client in
            // Their presence (which devices are online) comes after ours.
            try await client.settle()
            return try await ProfileCommands.whois(client, contact)
        }
        for line in lines { print(line) }
    }
}

struct Nick: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Set your nickname (XEP-0172).")
    @OptionGroup var account: AccountOptions
    @Argument(help: "The nickname.") var name: String

    func run() async throws {
        let lines = try await account.withClient { try await ProfileCommands.setNickname($0, name) }
        for line in lines { print(line) }
    }
}

struct AvatarCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "avatar", abstract: "Set your avatar (avatar set FILE) or save a contact's (avatar get JID [FILE]).")
    @OptionGroup var account: AccountOptions
    @Argument(help: "set or get.") var action: String
    @Argument(help: "set: the image file; get: the contact's JID.") var target: String
    @Argument(help: "get: where to save it.") var file: String?

    func run() async throws {
        let lines: [String]
        switch action {
        case "set":
            lines = try await account.withClient { try await ProfileCommands.setAvatar($0, file: target) }
        case "get":
            let contact = try parseJID(target)
            lines = try await account.withClient { try await ProfileCommands.getAvatar($0, of: contact, file: file) }
        default:
            throw CLIError("usage: parley avatar set FILE | parley avatar get JID [FILE]", .usage)
        }
        for line in lines { print(line) }
    }
}

struct Bookmarks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List, add or remove group chat bookmarks.")
    @OptionGroup var account: AccountOptions
    @Argument(help: "list (default), add ROOM [name], or remove ROOM.") var words: [String] = []

    func run() async throws {
        let words = words
        let lines = try await account.withClient { try await ProfileCommands.bookmarks($0, words) }
        for line in lines { print(line) }
    }
}

struct Add: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Add a contact and ask to be friends.")
    @OptionGroup var account: AccountOptions
    @Argument(help: "The contact's JID.") var contact: String
    @Option(name: .shortAndLong, help: "A note shown with the request.") var message: String?
    @Option(help: "A name for the contact.") var name: String?

    func run() async throws {
        let contact = try parseJID(contact)
        try await account.withClient { try await $0.addContact(contact, name: name, message: message) }
        print("asked \(contact.bare)")
    }
}

struct Accept: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Accept a friend request (and ask back).")
    @OptionGroup var account: AccountOptions
    @Argument(help: "Who asked.") var contact: String

    func run() async throws {
        let contact = try parseJID(contact)
        try await account.withClient { await $0.accept(contact) }
        print("accepted \(contact.bare)")
    }
}

struct Decline: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Decline a friend request.")
    @OptionGroup var account: AccountOptions
    @Argument(help: "Who asked.") var contact: String

    func run() async throws {
        let contact = try parseJID(contact)
        try await account.withClient { await $0.decline(contact) }
        print("declined \(contact.bare)")
    }
}

struct Remove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Remove a contact (both directions).")
    @OptionGroup var account: AccountOptions
    @Argument(help: "The contact's JID.") var contact: String

    func run() async throws {
        let contact = try parseJID(contact)
        try await account.withClient { try await $0.removeContact(contact) }
        print("removed \(contact.bare)")
    }
}

struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the conversation with a contact from the local cache (after fetching what waited offline).")
    @OptionGroup var account: AccountOptions
    @Argument(help: "The contact's JID.") var contact: String
    @Option(help: "How many messages.") var limit = 50

    func run() async throws {
        let contact = try parseJID(contact)
        let messages = try await account.withClient(online: true) { client in
            // Messages stored offline arrive after the initial presence, at the server's pace:
            // wait until a round trip brings nothing new.
            var count = -1
            for _ in 0..<20 {
                try await client.settle()
                let now = try await client.history(with: contact, limit: limit).count
                if now == count { break }
                count = now
                try await Task.sleep(for: .milliseconds(200))
            }
            return try await client.history(with: contact, limit: limit)
        }
        for message in messages { print(MessageFormat.historyLine(message)) }
    }
}

struct Passwd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Change the account's password (new one from PARLEY_NEW_PASSWORD or a prompt).")
    @OptionGroup var account: AccountOptions

    func run() async throws {
        let newPassword: String
        if let fromEnvironment = ProcessInfo.processInfo.environment["PARLEY_NEW_PASSWORD"], !fromEnvironment.isEmpty {
            newPassword = fromEnvironment
        } else {
            newPassword = try Terminal.readSecret(prompt: "New password: ")
            guard try Terminal.readSecret(prompt: "Again: ") == newPassword else { throw CLIError("the passwords differ", .usage) }
        }
        let (configuration, cachePath) = try account.resolve(reconnect: false)
        do {
            let client = try ChatClient(configuration: configuration, cachePath: cachePath, logger: account.logger)
            try await client.connect()
            try await client.changePassword(to: newPassword)
            await client.disconnect()
        } catch {
            throw CLIError(error, account: configuration.jid)
        }
        print("password changed; update PARLEY_PASSWORD or your config file")
    }
}
