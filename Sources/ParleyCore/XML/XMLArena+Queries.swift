/// What `XMLElement` asks of a parsed element, answered from the arena's tables without
/// making the attribute and child arrays of the built form.
extension XMLArena {
    /// The hottest read of all (`to`, `from`, `type`, `id` on every stanza): no String is
    /// copied until the one returned.
    func attributeValue(of element: Int32, name: String, namespace: String?) -> String? {
        let node = self.node(Int(element))
        let start = Int(node.start)
        for index in start..<start + Int(node.count) {
            let attribute = self.attribute(index)
            // The namespace first: for the usual nil it is a comparison of numbers.
            if string(attribute.namespace, equals: namespace), string(attribute.name, equals: name) {
                return makeString(attribute.valueStart, attribute.valueCount)
            }
        }
        return nil
    }

    /// `to`, `from`, `id` or `type` (no namespace), found by the name's number.
    func stanzaAttributeValue(of element: Int32, _ name: StanzaAttributeNames.Name) -> String? {
        let nameIndex = withUnsafeMutablePointerToHeader { $0.pointee.stanzaNames[name] }
        guard nameIndex >= 0 else { return nil }
        let node = self.node(Int(element))
        let start = Int(node.start)
        for index in start..<start + Int(node.count) {
            let attribute = self.attribute(index)
            if attribute.name == nameIndex, attribute.namespace < 0 {
                if name == .type,
                    let literal = StanzaTypeLiteral.matching(bytes(attribute.valueStart, attribute.valueCount))
                {
                    return literal
                }
                return makeString(attribute.valueStart, attribute.valueCount)
            }
        }
        return nil
    }

    func attributes(of element: Int32) -> [XMLAttribute] {
        let node = self.node(Int(element))
        let start = Int(node.start)
        return (start..<start + Int(node.count)).map { index in
            let attribute = self.attribute(index)
            return XMLAttribute(
                string(attribute.name), makeString(attribute.valueStart, attribute.valueCount),
                namespace: optionalString(attribute.namespace))
        }
    }

    func children(of element: Int32) -> [XMLNode] {
        var result: [XMLNode] = []
        result.reserveCapacity(Int(node(Int(element)).childCount))
        forEachChild(of: element) { index, child in
            result.append(
                child.isText ? .text(makeString(child.start, child.count)) : .element(XMLElement(arena: self, node: index)))
            return true
        }
        return result
    }

    /// The child elements that `matches` accepts, in order.
    func elements(of element: Int32, where matches: (XMLArena, Node) -> Bool) -> [XMLElement] {
        var result: [XMLElement] = []
        forEachChild(of: element) { index, child in
            if !child.isText, matches(self, child) { result.append(XMLElement(arena: self, node: index)) }
            return true
        }
        return result
    }

    func firstElement(of element: Int32, where matches: (XMLArena, Node) -> Bool) -> XMLElement? {
        var found: XMLElement?
        forEachChild(of: element) { index, child in
            guard !child.isText, matches(self, child) else { return true }
            found = XMLElement(arena: self, node: index)
            return false
        }
        return found
    }

    /// The element's own character data: a body is one text node, so usually one copy.
    func text(of element: Int32) -> String {
        var result: String?
        forEachChild(of: element) { _, child in
            if child.isText {
                let text = makeString(child.start, child.count)
                if result == nil { result = text } else { result! += text }
            }
            return true
        }
        return result ?? ""
    }

    /// Hands each child (its index and node) to `body` in order, until `body` returns false.
    @inline(__always)
    private func forEachChild(of element: Int32, _ body: (Int32, Node) -> Bool) {
        var index = element + 1
        for _ in 0..<node(Int(element)).childCount {
            let child = node(Int(index))
            if !body(index, child) { return }
            index = child.end
        }
    }
}
