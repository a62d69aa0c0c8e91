import Foundation

/// Where the CLI keeps its config and its cache: the XDG Base Directory rules, starting from
/// `$HOME`. Foundation's `NSHomeDirectory()` reads the passwd entry instead, which ignores a
/// `HOME` the user (or a test, a container, `sudo -H`) set on purpose.
struct UserDirectories: Equatable {
    var config: String
    var data: String

    static var current: UserDirectories { resolve(ProcessInfo.processInfo.environment) }

    /// `XDG_CONFIG_HOME` / `XDG_DATA_HOME` when set to an absolute path (the spec says to
    /// ignore relative ones, and an empty one counts as unset), else `$HOME/.config` and
    /// `$HOME/.local/share`; the passwd home only when `HOME` itself is missing.
    static func resolve(_ environment: [String: String]) -> UserDirectories {
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        func xdg(_ name: String, default fallback: String) -> String {
            guard let value = environment[name], value.hasPrefix("/") else { return fallback }
            return value
        }
        return UserDirectories(
            config: xdg("XDG_CONFIG_HOME", default: home + "/.config"),
            data: xdg("XDG_DATA_HOME", default: home + "/.local/share"))
    }
}
