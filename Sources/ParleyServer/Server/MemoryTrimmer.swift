import CMalloc
import Glibc
import NIOCore

/// Hands freed heap memory back to the system now and then. Idle connections free their
/// parser's buffers, but glibc keeps freed chunks inside the heap (and one heap per event-loop
/// thread), so without this the resident size of a server that once had a burst of activity
/// never comes down. Runs off the event loops; costs milliseconds every few seconds.
public struct MemoryTrimmer: Sendable {
    let interval: Duration

    /// Blocks of 32 KiB and more get pages of their own (mmap), returned to the system when
    /// freed. They are the bursts' buffers: a room's backlog of stanzas while hundreds enter
    /// at once, the arrays of one fan-out to a thousand occupants, a session's output
    /// coalesced while its client is slow to read. From the heap, each left the pages around
    /// it fragmented, and the resident size after a room of 300 filled stayed about 20 MB
    /// above what the room holds (bench/README.md, memory per occupant). Steady traffic
    /// allocates below the threshold, so it pays no system calls for this. Setting it also
    /// stops glibc from raising it by itself after such a block is freed.
    ///
    /// At most two heaps (arenas) per core, not glibc's eight: each thread that allocates
    /// (the event loops, the concurrency pool's threads, GRDB's and the archive's) got one of
    /// its own, and a burst spread over many heaps leaves each with pages partly used that
    /// `malloc_trim` cannot hand back. A room of 1,000 filling kept 11.3–11.4 KiB of anonymous
    /// memory per occupant with the default, 8.3 with four heaps and 8.6 with two on this
    /// 2-core machine; two heaps cost about 5 % more CPU per message in bench/messages.sh,
    /// four nothing measurable (bench/README.md, MUC memory, fifth round): about one heap for
    /// each core's event loop and one for its concurrency thread. Only heaps made after the
    /// call count, so parleyd calls this first thing. A limit set in the environment
    /// (`MALLOC_ARENA_MAX`, or `arena_max` in `GLIBC_TUNABLES`: the test processes set one)
    /// is left as it is.
    public static func configureAllocator() {
        _ = mallopt(M_MMAP_THRESHOLD, 32 << 10)
        let tunables = getenv("GLIBC_TUNABLES").map { String(cString: $0) } ?? ""
        if getenv("MALLOC_ARENA_MAX") == nil, !tunables.contains("arena_max") {
            _ = mallopt(M_ARENA_MAX, Int32(clamping: 2 * System.coreCount))
        }
    }

    func run() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            _ = malloc_trim(0)
        }
    }
}
