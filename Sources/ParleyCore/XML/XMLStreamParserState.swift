import CLibXML2

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Everything the SAX callbacks of one `XMLStreamParser` work on.
///
/// It lives in a heap block the parser allocates once (`UnsafeMutablePointer`), which libxml2
/// hands back to each callback as its user data: no class, so no reference counting and no
/// exclusivity checks on the hot path. All positions are byte offsets from the start of the
/// current stream (the last `reset()`), counted in the peer's bytes.
struct XMLStreamParserState {

    let limits: XMLStreamParser.Limits
    var context: xmlParserCtxtPtr?

    // MARK: Positions

    /// Added to libxml2's own position: non-zero after the context was replaced mid-stream.
    var positionOffset = 0
    /// Bytes of this stream handed to libxml2 so far.
    var fedTotal = 0
    /// `fedTotal` before the slice being parsed now.
    var sliceStart = 0
    /// Where the current stanza began: the end of the root start tag or of the last stanza.
    var boundary = 0

    // MARK: Document state

    /// Open elements, the root included.
    var depth = 0
    /// The stanza under way, written into tables that become its arena when it completes.
    var tree = XMLArenaBuilder()
    var names = XMLNameInterner()
    var header: XMLStreamHeader?
    var rootClosed = false
    /// The next root start tag is the replayed header of a replaced context: no event.
    var replayingHeader = false

    // MARK: Control

    /// Where events go during `feed`.
    var sink: ((XMLStreamEvent) -> XMLStreamParser.Next)?
    var failure: StreamError? { didSet { updateHalted() } }
    /// Set when the sink asked to stop: the position just after that event.
    var stopPosition: Int? { didSet { updateHalted() } }
    /// Set when the context should be replaced at this stanza boundary (its dictionary grew).
    var recyclePosition: Int? { didSet { updateHalted() } }
    /// Whether callbacks should do nothing (an error happened or the parser was stopped).
    private(set) var isHalted = false

    private mutating func updateHalted() {
        isHalted = failure != nil || stopPosition != nil || recyclePosition != nil
    }

    init(limits: XMLStreamParser.Limits) {
        self.limits = limits
    }

    /// Whether libxml2's dictionary (which only grows) should be replaced at this boundary.
    var dictionaryIsLarge: Bool {
        guard let context else { return false }
        return xmlDictGetUsage(context.pointee.dict) > XMLStreamParserContext.dictionaryRecycleUsage(limits)
            || names.count > XMLStreamParser.dictionaryRecycleNames
    }

    /// Frees the manually managed storage; the state must not be used afterwards.
    mutating func releaseStorage() {
        if buffersReleased { return }
        tree.deallocate()
        names.deallocate()
    }

    /// Forgets the document, keeping the buffers' capacity.
    mutating func resetDocument() {
        positionOffset = 0
        fedTotal = 0
        sliceStart = 0
        boundary = 0
        depth = 0
        tree.removeAll()
        header = nil
        streamStart = []
        rootClosed = false
        replayingHeader = false
        failure = nil
        stopPosition = nil
        recyclePosition = nil
    }

    /// The current parse position in the stream, in bytes.
    @inline(__always)
    func position() -> Int {
        let input = context.unsafelyUnwrapped.pointee.input.unsafelyUnwrapped
        return positionOffset + Int(input.pointee.consumed)
            + (input.pointee.cur.unsafelyUnwrapped - input.pointee.base.unsafelyUnwrapped)
    }

    /// Records the first violation and stops libxml2 at once.
    mutating func fail(_ error: StreamError) {
        if failure == nil { failure = error }
        if let context { xmlStopParser(context) }
    }

    /// Hands an event to the sink; stops libxml2 if the sink says so. `end` is the position just
    /// after the event's last byte.
    @inline(__always)
    mutating func emit(_ event: XMLStreamEvent, end: Int) {
        // Not `sink.unsafelyUnwrapped(event)`: that hands the closure over at the generic
        // abstraction level, and calling it then allocates a reabstraction thunk per event.
        if sink?(event) == .stop {
            stopPosition = end
            xmlStopParser(context)
        }
    }

    // MARK: Document events

    mutating func startDocument() {
        guard !isHalted, let context else { return }
        if let version = context.pointee.version, xmlStrEqual(version, "1.0") == 0 {
            return fail(XMLStreamParserErrors.xmlVersion(String(cString: version)))
        }
        guard let input = context.pointee.input, let base = input.pointee.base, let cur = input.pointee.cur else {
            return
        }
        // libxml2 ignores the declared encoding (XML_PARSE_IGNORE_ENC); the declaration it just
        // checked is all that lies before the current position.
        if let declared = XMLStreamEncoding.declaredEncoding(in: UnsafeBufferPointer(start: base, count: cur - base)),
            !XMLStreamEncoding.isUTF8(declared)
        {
            return fail(XMLStreamParserErrors.encoding(declared))
        }
        if input.pointee.buf?.pointee.encoder != nil {
            return fail(XMLStreamParserErrors.encoding(nil))
        }
    }

    mutating func startElement(
        _ localName: UnsafePointer<xmlChar>, _ prefix: UnsafePointer<xmlChar>?,
        _ uri: UnsafePointer<xmlChar>?, _ namespaceCount: Int,
        _ namespaces: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?, _ attributeCount: Int,
        _ attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
    ) {
        guard !isHalted else { return }
        let level = depth
        if level == 0 {
            return openStream(localName, prefix, uri, namespaceCount, namespaces, attributeCount, attributes)
        }
        if level > limits.maxDepth { return fail(XMLStreamParserErrors.tooDeep(limits.maxDepth)) }
        if position() - boundary > limits.maxStanzaBytes {
            return fail(XMLStreamParserErrors.stanzaTooLarge(limits.maxStanzaBytes))
        }
        let name = names.index(for: localName)
        let namespace = if let uri { names.index(for: uri) } else { Int32(-1) }
        let attributeCount = attributes == nil ? 0 : attributeCount
        tree.openElement(name: name, namespace: namespace, attributeCount: attributeCount)
        if let attributes {
            // SAX2 passes five pointers per attribute: local name, prefix, URI, value start, value end.
            for index in 0..<attributeCount {
                let fields = attributes + index * 5
                let attributeName = names.index(for: fields[0].unsafelyUnwrapped)
                let attributeNamespace = if let uri = fields[2] { names.index(for: uri) } else { Int32(-1) }
                let start = fields[3].unsafelyUnwrapped
                tree.appendAttribute(
                    name: attributeName, namespace: attributeNamespace, value: start,
                    count: fields[4].unsafelyUnwrapped - start)
            }
            tree.closeStartTag()
        }
        depth = level + 1
    }

    mutating func endElement() {
        guard !isHalted else { return }
        depth -= 1
        let level = depth
        if level == 0 {
            if replayingHeader { return }
            rootClosed = true
            return emit(.streamClosed, end: position())
        }
        let complete = tree.closeElement()
        if !complete { return }
        let end = position()
        if end - boundary > limits.maxStanzaBytes {
            return fail(XMLStreamParserErrors.stanzaTooLarge(limits.maxStanzaBytes))
        }
        boundary = end
        guard tree.bytesAreValidUTF8 else { return fail(XMLStreamParserErrors.invalidUTF8) }
        let arena = tree.finish(names: names.table, stanzaNames: names.stanzaNames)
        emit(.stanza(XMLElement(arena: arena, node: 0)), end: end)
        if stopPosition == nil, end >= sliceStart, dictionaryIsLarge {
            recyclePosition = end
            xmlStopParser(context)
        }
    }

    mutating func characters(_ bytes: UnsafePointer<xmlChar>, _ count: Int) {
        guard !isHalted else { return }
        let end = charactersEnd(bytes, count)
        if depth > 1 {
            if end - boundary > limits.maxStanzaBytes {
                return fail(XMLStreamParserErrors.stanzaTooLarge(limits.maxStanzaBytes))
            }
            tree.appendText(bytes, count)
            return
        }
        // Between stanzas: only whitespace (keepalives), which ends the previous stanza's span.
        for index in 0..<count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: continue
            default: return fail(XMLStreamParserErrors.textBetweenStanzas)
            }
        }
        boundary = max(boundary, end)
    }

    /// Where the characters being reported end. libxml2 passes text straight from its input
    /// buffer before moving past it, or (whitespace before `<`, decoded references) after.
    @inline(__always)
    private func charactersEnd(_ bytes: UnsafePointer<xmlChar>, _ count: Int) -> Int {
        let input = context.unsafelyUnwrapped.pointee.input.unsafelyUnwrapped
        return position() + (input.pointee.cur == bytes ? count : 0)
    }

    /// The root start tag: checks it and reports the header.
    private mutating func openStream(
        _ localName: UnsafePointer<xmlChar>, _ prefix: UnsafePointer<xmlChar>?,
        _ uri: UnsafePointer<xmlChar>?, _ namespaceCount: Int,
        _ namespaces: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?, _ attributeCount: Int,
        _ attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
    ) {
        if replayingHeader {
            replayingHeader = false
            depth = 1
            return
        }
        // libxml2 reports a start tag before it consumes its closing `>` or `/>`.
        let next = context.unsafelyUnwrapped.pointee.input.unsafelyUnwrapped.pointee.cur.unsafelyUnwrapped
        let end = position() + (next[0] == UInt8(ascii: "/") ? 2 : 1)
        if end > limits.maxHeaderBytes { return fail(XMLStreamParserErrors.headerTooLarge(limits.maxHeaderBytes)) }
        let namespace = uri.map { names.string(for: $0) }
        guard namespace == XMLNamespace.streams else { return fail(XMLStreamParserErrors.rootNamespace(namespace)) }
        let name = names.string(for: localName)
        guard name == "stream" else { return fail(XMLStreamParserErrors.rootName(name)) }
        var declarations: [String: String] = [:]
        if let namespaces {
            for index in 0..<namespaceCount {
                let declaredPrefix = namespaces[index * 2].map { names.string(for: $0) } ?? ""
                declarations[declaredPrefix] = namespaces[index * 2 + 1].map { names.string(for: $0) } ?? ""
            }
        }
        let opened = XMLStreamHeader(
            name: name, namespace: XMLNamespace.streams, prefix: prefix.map { names.string(for: $0) },
            attributes: makeAttributes(attributeCount, attributes), namespaceDeclarations: declarations)
        header = opened
        depth = 1
        boundary = end
        emit(.streamOpened(opened), end: end)
    }

    /// The first bytes of the stream, until there are four: checked for other encodings.
    var streamStart: [UInt8] = []

    // MARK: Helpers

    /// Whether the stanza tables and the name table are given back (an idle
    /// stream between stanzas); `restoreBuffers()` makes them anew before the next parse.
    private(set) var buffersReleased = false

    /// Frees the per-stream buffers while nothing is in them: with the libxml2 context gone
    /// too, an idle connection keeps almost nothing of the parser.
    mutating func releaseBuffers() {
        guard !buffersReleased, tree.isEmpty else { return }
        tree.deallocate()
        names.deallocate()
        buffersReleased = true
    }

    /// Keeps of the header only what renewing the context replays (its name, prefix and
    /// namespace declarations), sharing the usual client declarations instead of holding a
    /// copy: what the header said was reported when it arrived.
    mutating func compactHeader() {
        if streamStart.count >= 4 { streamStart = [] }
        guard let opened = header else { return }
        let declarations =
            opened.namespaceDeclarations == Self.clientDeclarations ? Self.clientDeclarations : opened.namespaceDeclarations
        header = XMLStreamHeader(
            name: "stream", namespace: XMLNamespace.streams, prefix: opened.prefix == "stream" ? "stream" : opened.prefix,
            attributes: [], namespaceDeclarations: declarations)
    }

    private static let clientDeclarations = ["": XMLNamespace.client, "stream": XMLNamespace.streams]

    mutating func restoreBuffers() {
        guard buffersReleased else { return }
        tree = XMLArenaBuilder()
        names = XMLNameInterner()
        buffersReleased = false
    }

    /// SAX2 passes five pointers per attribute: local name, prefix, URI, value start, value end.
    @inline(__always)
    private mutating func makeAttributes(
        _ count: Int, _ attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
    ) -> [XMLAttribute] {
        guard count > 0, let attributes else { return [] }
        return (0..<count).map { index in
            let fields = attributes + index * 5
            let name = names.string(for: fields[0].unsafelyUnwrapped)
            let namespace: String? = if let uri = fields[2] { names.string(for: uri) } else { nil }
            let start = fields[3].unsafelyUnwrapped
            let value = LibXML2AttributeValue.string(start, fields[4].unsafelyUnwrapped - start)
            return XMLAttribute(name, value, namespace: namespace)
        }
    }
}
