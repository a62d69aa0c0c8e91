import CLibXML2

/// Numbers for the names and namespace URIs libxml2 hands to SAX callbacks, found again by
/// libxml2's interned (dictionary) pointer; the Strings themselves live in an `XMLNameTable`.
///
/// libxml2 interns every element name, prefix and namespace URI in its per-context dictionary,
/// so equal names arrive as the same pointer for as long as that dictionary lives. A small
/// open-addressing table keyed by the pointer turns "decode and allocate a String" into a
/// multiply, a mask and a compare. The table must be emptied whenever the dictionary is freed.
///
/// It counts the names it holds, so the stream parser can bound it (with the dictionary).
///
/// Storage is manual (the owner calls `deallocate()`): lookups are on the hottest path.
struct XMLNameInterner {
    private struct Entry {
        var key: UInt
        var index: Int32
    }

    private var entries: UnsafeMutablePointer<Entry>
    private var mask: Int
    /// The Strings, shared with the stanzas parsed since the last `removeAll()`.
    private(set) var table: XMLNameTable
    /// Distinct names seen since the last `removeAll()`.
    var count: Int { table.count }
    /// The numbers of the names the router reads on every stanza.
    private(set) var stanzaNames = XMLArena.StanzaAttributeNames.none

    /// Small to start with: a client stream uses some twenty names, and every connection
    /// holds one of these (it grows as needed).
    init(capacity: Int = 4) {
        var size = 8
        while size < capacity * 2 { size <<= 1 }
        entries = .allocate(capacity: size)
        entries.initialize(repeating: Entry(key: 0, index: 0), count: size)
        mask = size - 1
        table = XMLNameTable()
    }

    /// Frees the lookup table and lets go of the Strings (stanzas still holding them keep
    /// them); the interner must not be used afterwards.
    mutating func deallocate() {
        entries.deallocate()
        table = .empty
    }

    @inline(__always)
    private static func slot(_ key: UInt, _ mask: Int) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> 40) & mask
    }

    /// The number of an interned libxml2 name in `table`.
    @inline(__always)
    mutating func index(for pointer: UnsafePointer<xmlChar>) -> Int32 {
        let key = UInt(bitPattern: pointer)
        var index = Self.slot(key, mask)
        while true {
            let entry = entries + index
            if entry.pointee.key == key { return entry.pointee.index }
            if entry.pointee.key == 0 { return insert(pointer, at: index) }
            index = (index + 1) & mask
        }
    }

    /// The String for an interned libxml2 name.
    @inline(__always)
    mutating func string(for pointer: UnsafePointer<xmlChar>) -> String {
        table[index(for: pointer)]
    }

    @inline(never)
    private mutating func insert(_ pointer: UnsafePointer<xmlChar>, at slot: Int) -> Int32 {
        let length = Int(xmlStrlen(pointer))
        let name = String(decoding: UnsafeBufferPointer(start: pointer, count: length), as: UTF8.self)
        let index = table.append(name)
        stanzaNames.note(name, at: index)
        entries[slot] = Entry(key: UInt(bitPattern: pointer), index: index)
        // At most a quarter full: most lookups then hit on the first probe.
        if count * 4 > mask + 1 { grow() }
        return index
    }

    private mutating func grow() {
        let old = entries
        let oldSize = mask + 1
        let size = oldSize * 2
        entries = .allocate(capacity: size)
        entries.initialize(repeating: Entry(key: 0, index: 0), count: size)
        mask = size - 1
        for index in 0..<oldSize where old[index].key != 0 {
            var slot = Self.slot(old[index].key, mask)
            while entries[slot].key != 0 { slot = (slot + 1) & mask }
            entries[slot] = old[index]
        }
        old.deallocate()
    }

    /// Forgets every name: call when the dictionary the pointers belong to is freed.
    mutating func removeAll() {
        deallocate()
        self = XMLNameInterner()
    }
}
