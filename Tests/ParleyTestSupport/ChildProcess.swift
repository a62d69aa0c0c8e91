import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A child process that a test can always stop: started with posix_spawn with no signal
/// blocked or ignored, and reaped with waitpid, with SIGKILL once a polite stop has waited
/// long enough.
///
/// Not Foundation's `Process`: a child inherits the signal mask of the thread that spawns
/// it, and the threads async code runs on block SIGTERM, so `terminate()` went unheard (a
/// Python server, parleyd) and `waitUntilExit()` waited for good, with nothing printed.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    private let lock = NSLock()
    private var exitStatus: Int32?

    /// `output`: the file that gets the child's stdout and stderr.
    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, output: String = "/dev/null") throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o666)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        // The test process ignores SIGPIPE; a child gets the default back, as from a shell.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let environment = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        var cArguments = ([executable] + arguments).map { strdup($0) } + [nil]
        var cEnvironment = environment.map { strdup($0) } + [nil]
        defer { for pointer in cArguments + cEnvironment { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, &cArguments, &cEnvironment)
        guard spawned == 0 else { throw Failure(description: "cannot run \(executable): \(String(cString: strerror(spawned)))") }
        self.pid = pid
    }

    deinit {
        if isRunning { kill() }
    }

    public var isRunning: Bool { reap(blocking: false) == nil }

    /// The raw wait status once the child has exited (0: exit code 0).
    public var status: Int32? { reap(blocking: false) }

    public func signal(_ signal: Int32) {
        if isRunning { Glibc.kill(pid, signal) }
    }

    /// Waits up to `timeout` for the child to exit by itself; nil if it has not.
    @discardableResult
    public func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let status = reap(blocking: false) { return status }
            if ContinuousClock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The same, blocking the calling thread: for a short command a synchronous caller runs.
    public func waitForExit(blockingFor timeout: Duration) -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let status = reap(blocking: false) { return status }
            if ContinuousClock.now >= deadline { return nil }
            usleep(20_000)
        }
    }

    /// SIGKILL at once (nothing flushed or closed politely); returns once the child is reaped.
    public func kill() {
        signal(SIGKILL)
        _ = reap(blocking: true)
    }

    /// SIGTERM, then SIGKILL if the child is still there after `grace`; returns once it is reaped.
    /// Blocking (for `defer`), at most `grace` plus the moment SIGKILL takes.
    @discardableResult
    public func stop(grace: Duration = .seconds(5)) -> Int32 {
        signal(SIGTERM)
        let deadline = ContinuousClock.now + grace
        while ContinuousClock.now < deadline {
            if let status = reap(blocking: false) { return status }
            usleep(20_000)
        }
        signal(SIGKILL)
        return reap(blocking: true) ?? -1
    }

    private func reap(blocking: Bool) -> Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, blocking ? 0 : WNOHANG)
            if result == pid {
                exitStatus = status
                return status
            }
            if result == 0 { return nil }
            if errno == ECHILD {
                // Reaped elsewhere: gone all the same.
                exitStatus = -1
                return -1
            }
            guard errno == EINTR else { return nil }
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }
}
