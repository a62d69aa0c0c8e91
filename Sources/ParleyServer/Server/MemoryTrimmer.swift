import CMalloc

/// Hands freed heap memory back to the system now and then. Idle connections free their
/// parser's buffers, but glibc keeps freed chunks inside the heap (and one heap per event-loop
/// thread), so without this the resident size of a server that once had a burst of activity
/// never comes down. Runs off the event loops; costs milliseconds every few seconds.
struct MemoryTrimmer: Sendable {
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
    /// The number of heaps (glibc's arenas: one per allocating thread, up to eight per core)
    /// is left alone. Two per core (`M_ARENA_MAX` 4 here, set before any thread started)
    /// kept 9.92 KiB per occupant of a room of 1,000 against 10.11 with the default, for
    /// 5–15 % more CPU per delivery (bench/README.md, MUC memory, fifth round).
    static func configureAllocator() {
        _ = mallopt(M_MMAP_THRESHOLD, 32 << 10)
    }

    func run() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            _ = malloc_trim(0)
        }
    }
}
