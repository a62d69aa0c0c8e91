/// The stream parser's workbench for the stanza being parsed: its node, attribute, string and
/// byte tables grow here as SAX callbacks arrive, and `finish()` copies them into one
/// `XMLArena`. The tables belong to the connection and keep their capacity from stanza to
/// stanza, so a stanza's only allocation is its arena; and the builder keeps the last arena as
/// a spare, written over for the next stanza if it fits and every reader of the last one has
/// let go (as a server's router does once it has passed the stanza on), so a steady stream of
/// chat allocates nothing.
///
/// Storage is manual (the owner calls `deallocate()`), as everything on the callbacks' path.
struct XMLArenaBuilder {
    typealias Node = XMLArena.Node
    typealias Attribute = XMLArena.Attribute

    private var nodes: Table<Node>
    private var attributes: Table<Attribute>
    private var bytes: Table<UInt8>
    /// Node indices of the elements whose end tag has not arrived yet, outermost first.
    private var open: Table<Int32>
    /// Where the character data since the last tag begins in `bytes`.
    private var textStart = 0
    /// An attribute value or text node began with a UTF-8 continuation byte: its first
    /// character would be the tail of the value before it.
    private var segmentStartsMidSequence = false
    /// The arena `finish` returned last, kept only while small: an idle connection gives it
    /// back with the tables (`deallocate`).
    private var spare: XMLArena?
    static let maxSpareBytes = 2048

    init() {
        nodes = Table(capacity: 8)
        attributes = Table(capacity: 8)
        bytes = Table(capacity: 256)
        open = Table(capacity: 8)
    }

    /// Frees the tables; the builder must not be used afterwards.
    mutating func deallocate() {
        nodes.deallocate()
        attributes.deallocate()
        bytes.deallocate()
        open.deallocate()
        spare = nil
    }

    /// Whether no stanza is under way (nothing would be lost by freeing the tables).
    var isEmpty: Bool { nodes.count == 0 && bytes.count == 0 }

    /// Forgets the stanza under way, keeping the tables' capacity.
    mutating func removeAll() {
        nodes.count = 0
        attributes.count = 0
        bytes.count = 0
        open.count = 0
        textStart = 0
        segmentStartsMidSequence = false
    }

    // MARK: Tree

    /// Opens an element whose `attributeCount` attributes follow at once (`appendAttribute`).
    @inline(__always)
    mutating func openElement(name: Int32, namespace: Int32, attributeCount: Int) {
        flushText()
        let index = Int32(truncatingIfNeeded: nodes.count)
        if open.count > 0 { nodes.pointer[Int(open.pointer[open.count - 1])].childCount += 1 }
        nodes.append(
            Node(
                name: name, namespace: namespace, start: Int32(truncatingIfNeeded: attributes.count),
                count: Int32(truncatingIfNeeded: attributeCount), end: 0, childCount: 0))
        open.append(index)
    }

    /// An attribute of the element opened last.
    @inline(__always)
    mutating func appendAttribute(name: Int32, namespace: Int32, value: UnsafePointer<UInt8>, count: Int) {
        let start = bytes.count
        if count > 0, value[0] & 0xC0 == 0x80 { segmentStartsMidSequence = true }
        bytes.reserve(count)
        bytes.count = start + LibXML2AttributeValue.decode(value, count, into: bytes.pointer + start)
        attributes.append(
            Attribute(
                name: name, namespace: namespace, valueStart: Int32(truncatingIfNeeded: start),
                valueCount: Int32(truncatingIfNeeded: bytes.count - start)))
    }

    /// Ends a start tag: character data begins after its attribute values.
    @inline(__always)
    mutating func closeStartTag() {
        textStart = bytes.count
    }

    @inline(__always)
    mutating func appendText(_ text: UnsafePointer<UInt8>, _ count: Int) {
        bytes.reserve(count)
        (bytes.pointer + bytes.count).initialize(from: text, count: count)
        bytes.count += count
    }

    /// Closes the innermost open element; returns whether that completed the stanza.
    @inline(__always)
    mutating func closeElement() -> Bool {
        flushText()
        open.count -= 1
        let index = Int(open.pointer[open.count])
        nodes.pointer[index].end = Int32(truncatingIfNeeded: nodes.count)
        return open.count == 0
    }

    /// Character data since the last tag becomes one text node of the innermost open element.
    @inline(__always)
    private mutating func flushText() {
        guard bytes.count > textStart, open.count > 0 else {
            textStart = bytes.count
            return
        }
        if bytes.pointer[textStart] & 0xC0 == 0x80 { segmentStartsMidSequence = true }
        nodes.pointer[Int(open.pointer[open.count - 1])].childCount += 1
        let index = Int32(truncatingIfNeeded: nodes.count)
        nodes.append(
            Node(
                name: Node.textMarker, namespace: -1, start: Int32(truncatingIfNeeded: textStart),
                count: Int32(truncatingIfNeeded: bytes.count - textStart), end: index + 1, childCount: 0))
        textStart = bytes.count
    }

    /// Whether every attribute value and text node of the stanza is well-formed UTF-8 on its
    /// own (see UTF8Validation): they lie back to back in `bytes`, so one pass over all of them
    /// does, given that none begins in the middle of a character.
    var bytesAreValidUTF8: Bool {
        !segmentStartsMidSequence && UTF8Validation.isValid(bytes.pointer, bytes.count)
    }

    /// The completed stanza as an arena; the builder is empty again afterwards.
    mutating func finish(names: XMLNameTable, stanzaNames: XMLArena.StanzaAttributeNames) -> XMLArena {
        let contents = XMLArena.Contents(
            names: names, stanzaNames: stanzaNames, nodes: UnsafeBufferPointer(start: nodes.pointer, count: nodes.count),
            attributes: UnsafeBufferPointer(start: attributes.pointer, count: attributes.count),
            bytes: UnsafeBufferPointer(start: bytes.pointer, count: bytes.count))
        let arena: XMLArena
        if isKnownUniquelyReferenced(&spare), spare.unsafelyUnwrapped.tailCapacity >= contents.byteSize {
            arena = spare.unsafelyUnwrapped
            arena.fill(contents)
        } else {
            arena = XMLArena.make(contents)
            spare = contents.byteSize <= Self.maxSpareBytes ? arena : nil
        }
        removeAll()
        return arena
    }
}

/// A manually managed growable buffer of trivially movable values.
private struct Table<Element> {
    var pointer: UnsafeMutablePointer<Element>
    var count = 0
    var capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        pointer = .allocate(capacity: capacity)
    }

    func deallocate() { pointer.deallocate() }

    @inline(__always)
    mutating func append(_ element: Element) {
        if count == capacity { grow(to: count + 1) }
        (pointer + count).initialize(to: element)
        count += 1
    }

    /// Makes room for `extra` more elements.
    @inline(__always)
    mutating func reserve(_ extra: Int) {
        if count + extra > capacity { grow(to: count + extra) }
    }

    @inline(never)
    private mutating func grow(to minimum: Int) {
        var newCapacity = capacity * 2
        while newCapacity < minimum { newCapacity *= 2 }
        let grown = UnsafeMutablePointer<Element>.allocate(capacity: newCapacity)
        grown.moveInitialize(from: pointer, count: count)
        pointer.deallocate()
        pointer = grown
        capacity = newCapacity
    }
}
