/// What `XMLElement` asks of a parsed element, answered from the arena's tables without
/// making the attribute and child arrays of the built form.
extension XMLArena {
    /// The hottest read of all (`to`, `from`, `type`, `id` on every stanza): no String is
    /// copied until the one returned.
    func attributeValue(of element: Int32, name: String, namespace: String?) -> String? {
        let node = self.node(Int(element))
        let start = Int(node.start)
        let end = start + Int(node.count)
        if let namespace {
            for index in start..<end {
                let attribute = self.attribute(index)
                if attribute.namespace >= 0, string(attribute.name, equals: name),
                    string(attribute.namespace, equals: namespace)
                {
                    return makeString(attribute.valueStart, attribute.valueCount)
                }
            }
        } else {
            for index in start..<end {
                let attribute = self.attribute(index)
                if attribute.namespace < 0, string(attribute.name, equals: name) {
                    return makeString(attribute.valueStart, attribute.valueCount)
                }
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
        let node = self.node(Int(element))
        var result: [XMLNode] = []
        result.reserveCapacity(Int(node.childCount))
        var child = element + 1
        for _ in 0..<node.childCount {
            let childNode = self.node(Int(child))
            if childNode.isText {
                result.append(.text(makeString(childNode.start, childNode.count)))
            } else {
                result.append(.element(XMLElement(arena: self, node: child)))
            }
            child = childNode.end
        }
        return result
    }

    /// The child elements that `matches` accepts, in order.
    func elements(of element: Int32, where matches: (XMLArena, Node) -> Bool) -> [XMLElement] {
        let node = self.node(Int(element))
        var result: [XMLElement] = []
        var child = element + 1
        for _ in 0..<node.childCount {
            let childNode = self.node(Int(child))
            if !childNode.isText, matches(self, childNode) {
                result.append(XMLElement(arena: self, node: child))
            }
            child = childNode.end
        }
        return result
    }

    func firstElement(of element: Int32, where matches: (XMLArena, Node) -> Bool) -> XMLElement? {
        let node = self.node(Int(element))
        var child = element + 1
        for _ in 0..<node.childCount {
            let childNode = self.node(Int(child))
            if !childNode.isText, matches(self, childNode) {
                return XMLElement(arena: self, node: child)
            }
            child = childNode.end
        }
        return nil
    }

    /// The element's own character data: a body is one text node, so usually one copy.
    func text(of element: Int32) -> String {
        let node = self.node(Int(element))
        var result: String?
        var child = element + 1
        for _ in 0..<node.childCount {
            let childNode = self.node(Int(child))
            if childNode.isText {
                let text = makeString(childNode.start, childNode.count)
                if result == nil { result = text } else { result! += text }
            }
            child = childNode.end
        }
        return result ?? ""
    }
}
