/// A short list that keeps its first element inline and only the others in an array: an
/// occupant's sessions (one device for nearly everyone), the rooms a session is in (one for
/// most). An array or a set of one is a heap block of its own (96 and 112 bytes), and a room
/// of N kept two of them per occupant, made while the room filled and scattered over the pages
/// of the fill's churn, which they then kept resident (bench/README.md, MUC, seventh round).
/// The array stays empty, and so unallocated, until a second element comes.
///
/// In order of insertion; `insert` adds only what is not there yet (a set of a few elements).
struct MUCCompactList<Element: Equatable>: RandomAccessCollection, ExpressibleByArrayLiteral {
    /// The first element; nil only when the list is empty.
    private var head: Element?
    /// The others, in order.
    private var tail: [Element] = []

    init() {}

    init(_ elements: some Sequence<Element>) {
        for element in elements { append(element) }
    }

    init(arrayLiteral elements: Element...) {
        self.init(elements)
    }

    var startIndex: Int { 0 }
    var endIndex: Int { head == nil ? 0 : 1 + tail.count }
    var isEmpty: Bool { head == nil }
    var first: Element? { head }

    subscript(position: Int) -> Element {
        precondition(head != nil && position >= 0 && position <= tail.count, "index out of range")
        return position == 0 ? head.unsafelyUnwrapped : tail[position - 1]
    }

    mutating func append(_ element: Element) {
        if head == nil { head = element } else { tail.append(element) }
    }

    /// Appends `element` unless the list holds it already; returns whether it did.
    @discardableResult
    mutating func insert(_ element: Element) -> Bool {
        if contains(element) { return false }
        append(element)
        return true
    }

    /// Removes every element equal to `element`.
    mutating func remove(_ element: Element) {
        removeAll { $0 == element }
    }

    mutating func removeAll(where shouldBeRemoved: (Element) throws -> Bool) rethrows {
        guard let first = head else { return }
        try tail.removeAll(where: shouldBeRemoved)
        if try shouldBeRemoved(first) {
            head = tail.first
            tail = Array(tail.dropFirst())
        } else if tail.isEmpty {
            // Without the block an emptied array keeps.
            tail = []
        }
    }

    /// The elements as an array (for APIs that take one).
    var array: [Element] { Array(self) }
}

extension MUCCompactList: Equatable {}
extension MUCCompactList: Sendable where Element: Sendable {}
