import ArgumentParser
import Foundation
import ParleyClient

/// `parley`: an XMPP chat client for the terminal, built on ParleyClient.
@main
struct Parley: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Chat over XMPP from the terminal.",
        discussion: """
            The account comes from ~/.config/parley/config.json (or --config): {"jid": "alice@example.org", \
            "host": "…", "port": 5222, "trusted_fingerprint": "…"}. The password comes from PARLEY_PASSWORD, \
            the config file's "password" (only if the file is chmod 600), or a prompt.

            Over XMPP-over-WebSocket (RFC 7395) instead of TCP: --websocket wss://host/xmpp-websocket, or \
            --websocket auto to use the endpoint the domain lists in its XEP-0156 host-meta (the same as \
            "websocket" in the config file).

            Exit codes: 0 ok, 1 usage or configuration error, 2 authentication failed, \
            3 connection or certificate problem, 4 the server refused.
            """,
        subcommands: [
            Chat.self, Register.self, Send.self, Roster.self, Add.self, Accept.self, Decline.self, Remove.self,
            History.self, Passwd.self, Whois.self, Nick.self, AvatarCommand.self, Bookmarks.self, RoomCommand.self, SendFile.self,
        ],
        defaultSubcommand: Chat.self)

    /// Maps every failure to one line on stderr and a documented exit code, never a trace.
    static func main() async {
        let command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                // --help and --version.
                print(fullMessage(for: error))
                Foundation.exit(ExitStatus.ok.rawValue)
            }
            Terminal.error(message(for: error).trimmingCharacters(in: .whitespacesAndNewlines))
            Foundation.exit(ExitStatus.usage.rawValue)
        }
        do {
            var command = command
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            Foundation.exit(ExitStatus.ok.rawValue)
        } catch let error as CLIError {
            Terminal.error(error.message)
            Foundation.exit(error.status.rawValue)
        } catch {
            // `parley help …` runs a help command that ends by "throwing" the help text.
            if exitCode(for: error) == .success {
                print(fullMessage(for: error))
                Foundation.exit(ExitStatus.ok.rawValue)
            }
            Terminal.error("\(error)")
            Foundation.exit(ExitStatus.usage.rawValue)
        }
    }
}
