import CMalloc
import Glibc
import NIOConcurrencyHelpers
import NIOCore

/// Hands freed heap memory back to the system now and then. Idle connections free their
/// parser's buffers, but glibc keeps freed chunks inside the heap (and one heap per event-loop
/// thread), so without this the resident size of a server that once had a burst of activity
/// never comes down. Runs off the event loops (each does one malloc and free for it, in quiet
/// rounds); costs milliseconds every few seconds.
struct MemoryTrimmer: Sendable {
    let interval: Duration
    /// The threads whose heaps' free tops are handed back each round (`releaseHeapTops`).
    let eventLoops: [any EventLoop]

    /// glibc's own defaults, set explicitly so that `releaseHeapTops` can put them back: a
    /// heap's free top goes back to the system when it passes 128 KiB, keeping 128 KiB.
    static let trimThreshold: Int32 = 128 << 10
    static let topPad: Int32 = 128 << 10

    /// Blocks of 32 KiB and more get pages of their own (mmap), returned to the system when
    /// freed. They are the bursts' buffers: a room's backlog of stanzas while hundreds enter
    /// at once, the arrays of one fan-out to a thousand occupants, a session's output
    /// coalesced while its client is slow to read. From the heap, each left the pages around
    /// it fragmented, and the resident size after a room of 300 filled stayed about 20 MB
    /// above what the room holds (bench/README.md, memory per occupant). Steady traffic
    /// allocates below the threshold, so it pays no system calls for this. Setting it also
    /// stops glibc from raising it by itself after such a block is freed.
    ///
    /// The number of heaps (glibc's arenas: one per allocating thread, up to eight per core)
    /// is left alone. Two per core (`M_ARENA_MAX` 4 here, set before any thread started)
    /// kept 9.92 KiB per occupant of a room of 1,000 against 10.11 with the default, for
    /// 5–15 % more CPU per delivery (bench/README.md, MUC memory, fifth round).
    static func configureAllocator() {
        _ = mallopt(M_MMAP_THRESHOLD, 32 << 10)
        trimHeapTops(above: trimThreshold, keeping: topPad)
    }

    private static func trimHeapTops(above threshold: Int32, keeping pad: Int32) {
        _ = mallopt(M_TRIM_THRESHOLD, threshold)
        _ = mallopt(M_TOP_PAD, pad)
    }

    func run() async {
        var cpuBefore = Self.processCPUSeconds()
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            let cpu = Self.processCPUSeconds()
            // Only after a quiet while: a busy server would fault its tops in again at once,
            // and in a room of 1,000 at full speed trimming them every round cost CPU per
            // delivery (bench/README.md, MUC memory, eighth round).
            if cpu - cpuBefore < Self.quietShare * (interval / .seconds(1)) { await releaseHeapTops() }
            cpuBefore = cpu
            _ = malloc_trim(0)
        }
    }

    /// The share of one core the whole process may have used over an interval for it to
    /// count as quiet.
    static let quietShare = 0.1

    static func processCPUSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// `malloc_trim` gives back the free pages inside every heap but the free top of the
    /// main one only; a thread's heap shrinks only when that thread frees a block of 64 KiB
    /// or more, and then keeps its pad. So each thread that allocated in a burst (the event
    /// loops, the concurrency pool's threads) kept up to ~256 KiB resident for nothing:
    /// after a room of 100 filled, about 2 KiB per occupant (bench/README.md, MUC memory,
    /// eighth round). Here every such heap gets that free, with neither threshold nor pad,
    /// for the moment it takes. Always on, those settings made the busy loops give pages
    /// back and fault them in again all the time (1:1 messages at full speed: up to four
    /// times the page faults, and 5–10 % more CPU per message).
    ///
    /// The concurrency pool's threads cannot be named: one task per thread is started, and
    /// each holds its thread (a few milliseconds at most) until all have freed, so that no
    /// thread runs two of them while another runs none. Other threads' frees in that moment
    /// trim their heaps as well.
    func releaseHeapTops() async {
        Self.trimHeapTops(above: 0, keeping: 0)
        let loopsDone = eventLoops.map { $0.submit { Self.freeLargeBlock() } }
        let poolThreads = System.coreCount
        let freed = NIOLockedValueBox(0)
        await withTaskGroup(of: Void.self) { tasks in
            for _ in 0..<poolThreads {
                tasks.addTask {
                    Self.freeLargeBlock()
                    freed.withLockedValue { $0 += 1 }
                    let deadline = NIODeadline.now() + .milliseconds(5)
                    while freed.withLockedValue({ $0 }) < poolThreads, NIODeadline.now() < deadline { usleep(100) }
                }
            }
        }
        for done in loopsDone { try? await done.get() }
        Self.trimHeapTops(above: Self.trimThreshold, keeping: Self.topPad)
    }

    /// Makes the calling thread free a block of over 64 KiB (three neighbours of 31 KiB,
    /// below the mmap threshold): glibc looks at a thread heap's top only on such a free.
    /// (`malloc_usable_size` keeps the optimizer from taking out the pair as unused.)
    private static func freeLargeBlock() {
        var blocks: (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?)
        blocks.0 = malloc(31 << 10)
        blocks.1 = malloc(31 << 10)
        blocks.2 = malloc(31 << 10)
        _ = malloc_usable_size(blocks.0) + malloc_usable_size(blocks.1) + malloc_usable_size(blocks.2)
        free(blocks.0)
        free(blocks.1)
        free(blocks.2)
    }
}
