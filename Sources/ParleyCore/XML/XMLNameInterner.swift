import CLibXML2

/// Swift Strings for the names and namespace URIs libxml2 hands to SAX callbacks, made once
/// per distinct name and found again by libxml2's interned (dictionary) pointer.
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
        var value: String
    }

    private var entries: UnsafeMutablePointer<Entry>
    private var mask: Int
    /// Distinct names seen since the last `removeAll()`.
    private(set) var count = 0

    /// Small to start with: a client stream uses some twenty names, and every connection
    /// holds one of these (it grows as needed).
    init(capacity: Int = 4) {
        var size = 8
        while size < capacity * 2 { size <<= 1 }
        entries = .allocate(capacity: size)
        entries.initialize(repeating: Entry(key: 0, value: ""), count: size)
        mask = size - 1
    }

    /// Frees the table; the interner must not be used afterwards.
    func deallocate() {
        entries.deinitialize(count: mask + 1)
        entries.deallocate()
    }

    @inline(__always)
    private static func slot(_ key: UInt, _ mask: Int) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> 40) & mask
    }

    /// The String for an interned libxml2 name.
    @inline(__always)
    mutating func string(for pointer: UnsafePointer<xmlChar>) -> String {
        let key = UInt(bitPattern: pointer)
        var index = Self.slot(key, mask)
        while true {
            let entry = entries + index
            if entry.pointee.key == key { return entry.pointee.value }
            if entry.pointee.key == 0 { return insert(pointer, at: index) }
            index = (index + 1) & mask
        }
    }

    @inline(never)
    private mutating func insert(_ pointer: UnsafePointer<xmlChar>, at index: Int) -> String {
        let length = Int(xmlStrlen(pointer))
        let string = String(decoding: UnsafeBufferPointer(start: pointer, count: length), as: UTF8.self)
        entries[index] = Entry(key: UInt(bitPattern: pointer), value: string)
        count += 1
        if count * 2 > mask + 1 { grow() }
        return string
    }

    private mutating func grow() {
        let old = entries
        let oldSize = mask + 1
        let size = oldSize * 2
        entries = .allocate(capacity: size)
        entries.initialize(repeating: Entry(key: 0, value: ""), count: size)
        mask = size - 1
        for index in 0..<oldSize where old[index].key != 0 {
            var slot = Self.slot(old[index].key, mask)
            while entries[slot].key != 0 { slot = (slot + 1) & mask }
            entries[slot] = old[index]
        }
        old.deinitialize(count: oldSize)
        old.deallocate()
    }

    /// Forgets every name: call when the dictionary the pointers belong to is freed.
    mutating func removeAll() {
        deallocate()
        self = XMLNameInterner()
    }
}
