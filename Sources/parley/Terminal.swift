#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// What the CLI needs from the terminal: colour only on a TTY (and without NO_COLOR), and a
/// password prompt that does not echo.
enum Terminal {
    static let colorEnabled: Bool = {
        let environment = ProcessInfo.processInfo.environment
        return isatty(STDOUT_FILENO) == 1 && environment["NO_COLOR"] == nil && environment["TERM"] != "dumb"
    }()

    enum Color: String {
        case red = "31", green = "32", yellow = "33", blue = "34", magenta = "35", cyan = "36", gray = "90"
    }

    static func paint(_ text: String, _ color: Color, bold: Bool = false) -> String {
        guard colorEnabled else { return text }
        return "\u{1B}[\(bold ? "1;" : "")\(color.rawValue)m\(text)\u{1B}[0m"
    }

    static func error(_ message: String) {
        FileHandle.standardError.write(Data("parley: \(message)\n".utf8))
    }

    /// Reads a line from the terminal with echo off; refuses when there is no terminal to ask.
    static func readSecret(prompt: String) throws -> String {
        guard isatty(STDIN_FILENO) == 1 else {
            throw CLIError("no password: set PARLEY_PASSWORD, add \"password\" to the config file, or run on a terminal", .usage)
        }
        FileHandle.standardError.write(Data(prompt.utf8))
        var original = termios()
        tcgetattr(STDIN_FILENO, &original)
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &silent)
        defer {
            tcsetattr(STDIN_FILENO, TCSANOW, &original)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            throw CLIError("no password given", .usage)
        }
        return line
    }
}
