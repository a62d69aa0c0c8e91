import CLibXML2

/// Swift Strings for the names and namespace URIs libxml2 hands to SAX callbacks, made once
/// per distinct name and found again by libxml2's interned (dictionary) pointer.
///
/// libxml2 interns every element name, prefix and namespace URI in its per-context dictionary,
/// so equal names arrive as the same pointer for as long as that dictionary lives. A small
/// open-addressing table keyed by the pointer turns "decode and allocate a String" into a
/// multiply, a mask and a compare. The table must be emptied whenever the dictionary is freed.
///
/// It also counts what it has seen, which is (almost exactly) what the peer has added to the
/// dictionary: the stream parser uses that to replace a context whose dictionary grew large
/// before libxml2's own limit would kill the stream.
struct XMLNameInterner {
    private var keys: [UInt]
    private var values: [String]
    private var mask: Int
    /// Distinct names seen since the last `removeAll()`.
    private(set) var count = 0
    /// Bytes of those names, each with the terminating NUL libxml2 stores too.
    private(set) var bytes = 0

    init(capacity: Int = 256) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        keys = Array(repeating: 0, count: size)
        values = Array(repeating: "", count: size)
        mask = size - 1
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
            let found = keys[index]
            if found == key { return values[index] }
            if found == 0 { return insert(pointer, at: index) }
            index = (index + 1) & mask
        }
    }

    @inline(never)
    private mutating func insert(_ pointer: UnsafePointer<xmlChar>, at index: Int) -> String {
        let length = Int(xmlStrlen(pointer))
        let string = String(decoding: UnsafeBufferPointer(start: pointer, count: length), as: UTF8.self)
        keys[index] = UInt(bitPattern: pointer)
        values[index] = string
        count += 1
        bytes += length + 1
        if count * 2 > keys.count { grow() }
        return string
    }

    private mutating func grow() {
        let oldKeys = keys
        let oldValues = values
        let size = keys.count * 2
        keys = Array(repeating: 0, count: size)
        values = Array(repeating: "", count: size)
        mask = size - 1
        for index in oldKeys.indices where oldKeys[index] != 0 {
            var slot = Self.slot(oldKeys[index], mask)
            while keys[slot] != 0 { slot = (slot + 1) & mask }
            keys[slot] = oldKeys[index]
            values[slot] = oldValues[index]
        }
    }

    /// Forgets every name: call when the dictionary the pointers belong to is freed.
    mutating func removeAll() {
        self = XMLNameInterner()
    }
}
