import NIOCore

/// Runs a Swift task's jobs on one NIO event loop: the work a session's stanzas start
/// (presence, offline delivery, its logout) runs on that session's loop instead of Swift's
/// global executor.
///
/// On the global executor each such task cost thread hand-offs: its start woke an executor
/// thread, every storage read resumed on another one, and every stanza it sent hopped back
/// to the session's loop. A login does several of these; on two cores the wake-ups were a
/// quarter of its CPU (bench/README.md, "SCRAM logins"). On the loop, starting the task and
/// delivering to the session cost no hand-off, and a storage read resumes with one.
///
/// The work itself never blocks: storage I/O still runs on storage's threads, and a task
/// awaiting it leaves the loop free meanwhile.
final class EventLoopTaskExecutor: TaskExecutor, Sendable {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// One executor per loop of the server's group, made at start, so sessions share them.
public struct EventLoopTaskExecutors: Sendable {
    private let byLoop: [ObjectIdentifier: EventLoopTaskExecutor]

    public init(_ group: any EventLoopGroup) {
        var byLoop: [ObjectIdentifier: EventLoopTaskExecutor] = [:]
        for loop in group.makeIterator() { byLoop[ObjectIdentifier(loop)] = EventLoopTaskExecutor(loop) }
        self.byLoop = byLoop
    }

    public init() {
        byLoop = [:]
    }

    /// nil for a loop of another group: its tasks run on the global executor.
    func executor(for loop: any EventLoop) -> EventLoopTaskExecutor? {
        byLoop[ObjectIdentifier(loop)]
    }
}
