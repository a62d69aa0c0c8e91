import Foundation

/// Starts child processes one at a time. Foundation's `Process.run()` on Linux crashed (in a
/// `memcpy` inside `run()`) when several suites of this one test process launched Prosody,
/// `parley` and `parleyd` at the same moment; launches are quick, so taking turns costs nothing.
public enum ProcessLaunch {
    private static let lock = NSLock()

    public static func run(_ process: Process) throws {
        lock.lock()
        defer { lock.unlock() }
        try process.run()
    }
}
