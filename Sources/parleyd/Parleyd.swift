import ArgumentParser

@main
struct Parleyd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parleyd",
        abstract: "Parley XMPP server.",
        subcommands: [Run.self, AddUser.self, DeleteUser.self, ChangePassword.self, ListUsers.self, Uploads.self, StorageCommand.self],
        defaultSubcommand: Run.self)
}

/// Options every subcommand shares: the same configuration, so admin commands act on the
/// store the server uses.
struct ConfigOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: "YAML configuration file (default: built-in defaults).")
    var config: String?
}
