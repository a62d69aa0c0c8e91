import CMalloc

/// Hands freed heap memory back to the system now and then. Idle connections free their
/// parser's buffers, but glibc keeps freed chunks inside the heap (and one heap per event-loop
/// thread), so without this the resident size of a server that once had a burst of activity
/// never comes down. Runs off the event loops; costs milliseconds every few seconds.
struct MemoryTrimmer: Sendable {
    let interval: Duration

    func run() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: interval)
            _ = malloc_trim(0)
        }
    }
}
