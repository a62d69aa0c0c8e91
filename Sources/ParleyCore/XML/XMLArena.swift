/// One parsed stanza in a single heap block: every element and text node, every attribute and
/// all their bytes. The stream parser writes a stanza into it in one go; `XMLElement`s read it
/// through views (the arena and a node index), so a stanza costs at most one allocation however
/// many elements, attributes and texts it has, and freeing it is one release.
///
/// Names and namespace URIs are numbers in the parser's `XMLNameTable`, which the arena keeps
/// alive: a stanza holds no Strings, so freeing it destroys nothing but itself.
///
/// Layout of the tail, in this order (every part 8-byte aligned but the last):
/// - `nodes`: elements and text nodes in document order (pre-order), so an element's
///   descendants are the nodes after it up to its `end`, its first child (if any) is the next
///   node, and a child's next sibling is at the child's `end`;
/// - `attributes`: each element's attributes, contiguous, in document order;
/// - `bytes`: attribute values (references already decoded) and text, as UTF-8.
///
/// Safe to share between threads because it is immutable while shared: the parser fills it
/// before anyone else sees it (the stanza event hands it over), and writes to it again only
/// when it holds the sole reference (it keeps the last arena as a spare, and reuses it once
/// every reader has let go); the name table only ever appends (see `XMLNameTable`).
/// (ManagedBuffer refuses a Sendable conformance, so `XMLElement.Content` carries the unchecked one.)
final class XMLArena: ManagedBuffer<XMLArena.Header, UInt64> {
    /// Trivial, so that destroying it costs nothing: the table is released by hand in `deinit`.
    struct Header {
        var names: Unmanaged<XMLNameTable>
        var stanzaNames: StanzaAttributeNames
        var nodeCount: Int
        var attributeCount: Int
        var byteCount: Int
        /// Bytes the tail can hold, so the parser can tell whether a stanza fits when it reuses it.
        var tailCapacity: Int
    }

    struct Node {
        static let textMarker: Int32 = -1
        /// Index into the name table, or `textMarker` for a text node.
        var name: Int32
        /// Index into the name table, or -1 for no namespace.
        var namespace: Int32
        /// An element's first attribute, or a text node's first byte.
        var start: Int32
        /// An element's attribute count, or a text node's byte count.
        var count: Int32
        /// The index just past this node's subtree: its next sibling, if it has one.
        var end: Int32
        var childCount: Int32

        var isText: Bool { name == Self.textMarker }
    }

    /// Where `to`, `from`, `id` and `type` are in the name table (-1: not seen yet), so that
    /// the router's reads of every stanza compare numbers, not Strings.
    struct StanzaAttributeNames {
        static let none = StanzaAttributeNames(to: -1, from: -1, id: -1, type: -1)
        var to: Int32
        var from: Int32
        var id: Int32
        var type: Int32

        enum Name: String { case to, from, id, type }

        @inline(__always)
        subscript(name: Name) -> Int32 {
            switch name {
            case .to: to
            case .from: from
            case .id: id
            case .type: type
            }
        }

        /// Notes `name`'s place if it is one of the four.
        mutating func note(_ name: String, at index: Int32) {
            switch Name(rawValue: name) {
            case .to: to = index
            case .from: from = index
            case .id: id = index
            case .type: type = index
            case nil: break
            }
        }
    }

    struct Attribute {
        var name: Int32
        var namespace: Int32
        var valueStart: Int32
        var valueCount: Int32
    }

    static func byteSize(nodes: Int, attributes: Int, bytes: Int) -> Int {
        nodes * MemoryLayout<Node>.stride + attributes * MemoryLayout<Attribute>.stride + bytes
    }

    deinit {
        withUnsafeMutablePointerToHeader { $0.pointee.names.release() }
    }

    // MARK: Reading

    /// Pointers into the tail; valid while `self` is alive (callers hold it).
    /// The name table, borrowed: the arena holds it for as long as the arena lives.
    @inline(__always)
    private func withNames<Result>(_ body: (XMLNameTable) -> Result) -> Result {
        withUnsafeMutablePointerToHeader { header in header.pointee.names._withUnsafeGuaranteedRef(body) }
    }

    @inline(__always)
    private var nodes: UnsafeMutablePointer<Node> {
        withUnsafeMutablePointerToElements { UnsafeMutableRawPointer($0).assumingMemoryBound(to: Node.self) }
    }

    @inline(__always)
    private var attributeTable: UnsafeMutablePointer<Attribute> {
        withUnsafeMutablePointers { header, tail in
            (UnsafeMutableRawPointer(tail) + header.pointee.nodeCount * MemoryLayout<Node>.stride)
                .assumingMemoryBound(to: Attribute.self)
        }
    }

    @inline(__always)
    private var byteBase: UnsafeMutablePointer<UInt8> {
        withUnsafeMutablePointers { header, tail in
            (UnsafeMutableRawPointer(tail) + header.pointee.nodeCount * MemoryLayout<Node>.stride
                + header.pointee.attributeCount * MemoryLayout<Attribute>.stride)
                .assumingMemoryBound(to: UInt8.self)
        }
    }

    @inline(__always)
    func node(_ index: Int) -> Node { nodes[index] }

    @inline(__always)
    func string(_ index: Int32) -> String { withNames { $0[index] } }

    @inline(__always)
    func optionalString(_ index: Int32) -> String? { index < 0 ? nil : withNames { $0[index] } }

    @inline(__always)
    func attribute(_ index: Int) -> Attribute { attributeTable[index] }

    @inline(__always)
    func bytes(_ start: Int32, _ count: Int32) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: byteBase + Int(start), count: Int(count))
    }

    @inline(__always)
    func makeString(_ start: Int32, _ count: Int32) -> String { String(parsedUTF8: bytes(start, count)) }

    @inline(__always)
    func string(_ index: Int32, equals string: String) -> Bool { withNames { $0.entry(index, equals: string) } }

    @inline(__always)
    func string(_ index: Int32, equals string: String?) -> Bool {
        guard let string else { return index < 0 }
        return index >= 0 && withNames { $0.entry(index, equals: string) }
    }

    // MARK: Writing (the builder only, while nobody else holds the arena)

    /// Tails are rounded up to this, so a reused arena fits the next stanza of a conversation
    /// whose messages differ by a few words.
    static let tailGranule = 128

    /// A stanza's tables as the builder holds them, to be copied into an arena. Lives only
    /// for the copy, while the parser holds the name table: no reference counting for it.
    struct Contents {
        unowned(unsafe) let names: XMLNameTable
        var stanzaNames: StanzaAttributeNames
        var nodes: UnsafeBufferPointer<Node>
        var attributes: UnsafeBufferPointer<Attribute>
        var bytes: UnsafeBufferPointer<UInt8>

        /// The tail they need.
        var byteSize: Int { XMLArena.byteSize(nodes: nodes.count, attributes: attributes.count, bytes: bytes.count) }
    }

    /// A new arena holding `contents`.
    static func make(_ contents: Contents) -> XMLArena {
        let capacity = (contents.byteSize + tailGranule - 1) / tailGranule * tailGranule
        let buffer = create(minimumCapacity: capacity / 8) { _ in
            Header(
                names: .passRetained(contents.names), stanzaNames: contents.stanzaNames, nodeCount: 0,
                attributeCount: 0, byteCount: 0, tailCapacity: capacity)
        }
        let arena = unsafeDowncast(buffer, to: XMLArena.self)
        arena.fill(contents)
        return arena
    }

    /// The most bytes of tables the arena can hold.
    @inline(__always)
    var tailCapacity: Int { withUnsafeMutablePointerToHeader { $0.pointee.tailCapacity } }

    /// Writes `contents` over whatever the arena held. Only for an arena no one else holds: a
    /// new one, or the parser's spare once every reader of its last stanza let go.
    @inline(__always)
    func fill(_ contents: Contents) {
        withUnsafeMutablePointerToHeader { header in
            if header.pointee.names.toOpaque() != Unmanaged.passUnretained(contents.names).toOpaque() {
                header.pointee.names.release()
                header.pointee.names = .passRetained(contents.names)
            }
            header.pointee.stanzaNames = contents.stanzaNames
            header.pointee.nodeCount = contents.nodes.count
            header.pointee.attributeCount = contents.attributes.count
            header.pointee.byteCount = contents.bytes.count
        }
        nodes.initialize(from: contents.nodes.baseAddress.unsafelyUnwrapped, count: contents.nodes.count)
        attributeTable.initialize(from: contents.attributes.baseAddress.unsafelyUnwrapped, count: contents.attributes.count)
        byteBase.initialize(from: contents.bytes.baseAddress.unsafelyUnwrapped, count: contents.bytes.count)
    }
}
