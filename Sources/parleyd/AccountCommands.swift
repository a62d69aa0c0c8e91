import ArgumentParser
import Foundation
import ParleyCore
import ParleyServer
import ParleyStorage

/// Administration of accounts, on the same database the server uses; safe while it runs
/// (the server ends the sessions of removed accounts by itself).
struct AddUser: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "adduser", abstract: "Create an account. The password comes from PARLEYD_PASSWORD, standard input, or a prompt.")

    @OptionGroup var options: ConfigOptions
    @Argument(help: "The username (the part before @) or the full bare JID.") var user: String

    func run() async throws {
        let (configuration, username) = try await accountTarget(options, user)
        let password = try readNewPassword()
        let keys = try AccountKeys.derive(password: password, iterations: configuration.auth.scramIterations)
        let storage = try await openStorage(configuration)
        do {
            try await storage.createAccount(username: username, keys: keys)
        } catch StorageError.accountExists {
            throw ValidationError("\(username)@\(configuration.domain) already exists")
        }
        print("created \(username)@\(configuration.domain)")
    }
}

struct DeleteUser: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "deluser", abstract: "Delete an account; its sessions end at once.")

    @OptionGroup var options: ConfigOptions
    @Argument(help: "The username or bare JID.") var user: String

    func run() async throws {
        let (configuration, username) = try await accountTarget(options, user)
        let storage = try await openStorage(configuration)
        // The files first: once the account is gone its upload rows are too, and a running
        // server would only find the files again through the change feed.
        _ = try? await uploadMaintenance(configuration).delete(owner: username)
        guard try await storage.deleteAccount(username: username, origin: .admin) else {
            throw ValidationError("\(username)@\(configuration.domain) does not exist")
        }
        print("deleted \(username)@\(configuration.domain)")
    }
}

struct ChangePassword: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passwd", abstract: "Set an account's password; its sessions must sign in again.")

    @OptionGroup var options: ConfigOptions
    @Argument(help: "The username or bare JID.") var user: String

    func run() async throws {
        let (configuration, username) = try await accountTarget(options, user)
        let password = try readNewPassword()
        let keys = try AccountKeys.derive(password: password, iterations: configuration.auth.scramIterations)
        let storage = try await openStorage(configuration)
        do {
            try await storage.updateKeys(username: username, keys: keys, origin: .admin)
        } catch StorageError.accountNotFound {
            throw ValidationError("\(username)@\(configuration.domain) does not exist")
        }
        print("password changed for \(username)@\(configuration.domain)")
    }
}

struct ListUsers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "users", abstract: "List the accounts.")

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        let configuration = try await loadConfiguration(options)
        let storage = try await openStorage(configuration)
        for username in try await storage.usernames() { print("\(username)@\(configuration.domain)") }
    }
}

func accountTarget(_ options: ConfigOptions, _ user: String) async throws -> (ServerConfiguration, String) {
    let configuration = try await loadConfiguration(options)
    let domain = configuration.domain
    let localpart = user.contains("@") ? String(user.split(separator: "@", maxSplits: 1)[0]) : user
    if user.contains("@"), let jid = try? JID(user), jid.domainpart != (try? JID(domain))?.domainpart {
        throw ValidationError("\(user) is not on this server's domain (\(domain))")
    }
    do {
        guard let canonical = try JID(localpart: localpart, domainpart: domain).localpart else { throw JIDError.emptyPart(.localpart) }
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        return (configuration, canonical)
    } catch let error as JIDError {
        throw ValidationError("'\(user)' is not a valid username: \(error)")
    }
}

/// The password for a new account or a change, never from the command line (it would show
/// in `ps` and shell history).
private func readNewPassword() throws -> String {
    if let password = ProcessInfo.processInfo.environment["PARLEYD_PASSWORD"], !password.isEmpty { return password }
    if isatty(STDIN_FILENO) == 0 {
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            throw ValidationError("no password on standard input")
        }
        return line
    }
    guard let first = getpass("Password: ").map({ String(cString: $0) }), !first.isEmpty else {
        throw ValidationError("the password is empty")
    }
    guard let second = getpass("Repeat password: ").map({ String(cString: $0) }), second == first else {
        throw ValidationError("the passwords do not match")
    }
    return first
}
