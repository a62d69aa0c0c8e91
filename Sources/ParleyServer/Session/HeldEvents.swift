import ParleyCore

/// The stream events a session holds while it waits (for storage, or for its stanza rate),
/// handled later in arrival order. Popping from the front of an Array shifts everything
/// behind it; a single read can hold hundreds of events, so this keeps a moving head instead.
struct HeldEvents {
    private var events: [XMLStreamEvent] = []
    private var head = 0

    var isEmpty: Bool { head == events.count }
    var count: Int { events.count - head }

    mutating func append(_ event: XMLStreamEvent) {
        events.append(event)
    }

    /// Puts an event back in front, to be handled before everything held.
    mutating func pushFront(_ event: XMLStreamEvent) {
        if head > 0 {
            head -= 1
            events[head] = event
        } else {
            events.insert(event, at: 0)
        }
    }

    mutating func popFirst() -> XMLStreamEvent? {
        guard head < events.count else { return nil }
        let event = events[head]
        head += 1
        if head == events.count {
            // Not kept for the next wait: most sessions are idle most of the time, and an
            // idle session's memory is what limits how many a server holds.
            events = []
            head = 0
        }
        return event
    }
}
