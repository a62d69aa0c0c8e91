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
    static let configuration = CommandConfiguration(abstract: "List contacts and their subscription state.")
    @OptionGroup var account: AccountOptions

    func run() async throws {
        let contacts = try await account.withClient { client in
            try await client.refreshRoster()
            return await client.contacts()
        }
        for contact in contacts { print(RosterFormat.line(for: contact)) }
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
