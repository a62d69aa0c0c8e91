import CLibXML2

/// An incremental XMPP stream parser: bytes in, `XMLStreamEvent`s out, in any chunking.
///
/// A libxml2 SAX2 push parser underneath builds each depth-1 element (a stanza, or a
/// stream-level element such as `<starttls/>`) into an `XMLElement` tree and reports it the
/// moment its last `>` arrives. DTDs, entity declarations and references other than the five
/// predefined ones, comments and processing instructions are refused (RFC 6120 §11.1), which
/// also makes it safe against XXE and entity expansion. Stanza size, nesting depth and the size
/// of the stream header are capped (`Limits`).
///
/// Not thread-safe: use one parser per stream, on one thread. A `handle` closure must not call
/// back into the parser that is calling it.
public final class XMLStreamParser {
    public struct Limits: Sendable {
        /// The most bytes one stanza may span, from the end of the previous one (or of the
        /// stream header) to its own last `>`; whitespace keepalives in between do not count.
        public var maxStanzaBytes: Int = 262_144
        /// The deepest element allowed, counting the root as 0 and a stanza as 1.
        public var maxDepth: Int = 32
        /// The most bytes before the end of the root start tag (XML declaration included).
        public var maxHeaderBytes: Int = 16_384

        public init(maxStanzaBytes: Int = 262_144, maxDepth: Int = 32) {
            self.maxStanzaBytes = maxStanzaBytes
            self.maxDepth = maxDepth
        }
    }

    public enum Next {
        case `continue`, stop
    }

    /// When this many distinct names were seen, the libxml2 context (and so its dictionary, which
    /// only grows) is replaced at the next stanza boundary, as when the dictionary's memory grows
    /// past a quarter of its limit. Honest peers never get near either.
    static let dictionaryRecycleNames = 32_768
    /// The most bytes handed to libxml2 in one call, so the size limits are checked often.
    static let maxSlice = 64 * 1024

    /// Nil while the stream rests (`releaseIdleMemory()`); `parked` then holds what the next
    /// `feed` needs to go on.
    private var state: UnsafeMutablePointer<XMLStreamParserState>!
    private let limits: Limits
    /// The root's name and declarations (to replay to a new context) and the stream position.
    private var parked: (header: XMLStreamHeader, position: Int)?

    public init(limits: Limits = .init()) {
        self.limits = limits
        state = .allocate(capacity: 1)
        state.initialize(to: XMLStreamParserState(limits: limits))
        state.pointee.context = XMLStreamParserContext.make(for: state)
    }

    deinit {
        guard let state else { return }
        if let context = state.pointee.context { xmlFreeParserCtxt(context) }
        state.pointee.releaseStorage()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// A fresh state block for a parked stream, its context left to the next `parse`, which
    /// replays the header to one as after any other renewal.
    private func unpark() {
        guard state == nil, let parked else { return }
        let state = UnsafeMutablePointer<XMLStreamParserState>.allocate(capacity: 1)
        state.initialize(to: XMLStreamParserState(limits: limits))
        state.pointee.header = parked.header
        state.pointee.depth = 1
        state.pointee.fedTotal = parked.position
        state.pointee.boundary = parked.position
        self.state = state
        self.parked = nil
    }

    /// Feeds bytes; calls `handle` for each event in order. If `handle` returns `.stop` the
    /// parser stops right after that event and returns the number of bytes of `bytes` consumed
    /// up to and including that event's last byte, so the caller can `reset()` and feed the rest
    /// to the next stream layer. Otherwise returns `bytes.count`.
    ///
    /// Throws a `StreamError` on any violation; after a throw (or a stop) the parser is dead
    /// until `reset()`.
    @discardableResult
    public func feed(
        _ bytes: UnsafeRawBufferPointer, _ handle: (XMLStreamEvent) -> Next
    ) throws(StreamError) -> Int {
        if state == nil { unpark() }
        let state: UnsafeMutablePointer<XMLStreamParserState> = self.state
        if let failure = state.pointee.failure { throw failure }
        if state.pointee.stopPosition != nil { throw XMLStreamParserErrors.fedAfterStop }
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return 0 }
        let result: Result<Int, StreamError> = withoutActuallyEscaping(handle) { handle in
            state.pointee.sink = handle
            defer { state.pointee.sink = nil }
            return Result { () throws(StreamError) -> Int in try parse(base, bytes.count) }
        }
        return try result.get()
    }

    /// Feeds bytes and returns the events they completed.
    public func feed(_ bytes: [UInt8]) throws(StreamError) -> [XMLStreamEvent] {
        var events: [XMLStreamEvent] = []
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(StreamError) -> Int in
                try feed(raw) { event in
                    events.append(event)
                    return .continue
                }
            }
        }
        _ = try result.get()
        return events
    }

    /// Starts a new stream on the same object, for the restarts after STARTTLS and SASL.
    public func reset() {
        if state == nil { unpark() }
        state.pointee.restoreBuffers()
        let hadFailure = state.pointee.failure != nil
        state.pointee.resetDocument()
        if hadFailure || state.pointee.dictionaryIsLarge || state.pointee.context == nil {
            replaceContext()
        } else {
            XMLStreamParserContext.reset(state.pointee.context.unsafelyUnwrapped, state: state)
        }
    }

    /// Whether everything fed so far completed an element or is whitespace between elements:
    /// a transport that frames one element per message (RFC 7395) checks this after each one.
    public var isBetweenStanzas: Bool {
        // A parked stream rests between stanzas by construction (`releaseIdleMemory()`).
        guard let state = self.state else { return parked != nil }
        guard state.pointee.failure == nil, state.pointee.header != nil, state.pointee.depth == 1 else { return false }
        guard let context = state.pointee.context else { return true }
        return XMLStreamParserContext.onlyWhitespaceBuffered(context)
    }

    /// Whether libxml2's parser context is allocated: false once `releaseIdleMemory()` gave
    /// it back, until the next `feed`.
    public var holdsContext: Bool { state?.pointee.context != nil }

    /// Frees libxml2's parser context (its input buffer and name dictionary, most of a
    /// connection's memory) while the stream rests between stanzas; the next `feed` builds
    /// a fresh one and replays the root's namespace declarations, as for dictionary renewal.
    /// Does nothing, returning false, unless everything fed so far completed a stanza (or is
    /// whitespace between stanzas).
    @discardableResult
    public func releaseIdleMemory() -> Bool {
        guard let state = self.state, let context = state.pointee.context, state.pointee.failure == nil, state.pointee.stopPosition == nil,
            state.pointee.header != nil, !state.pointee.rootClosed, state.pointee.depth == 1,
            !state.pointee.replayingHeader, XMLStreamParserContext.onlyWhitespaceBuffered(context)
        else { return false }
        xmlFreeParserCtxt(context)
        state.pointee.context = nil
        state.pointee.releaseBuffers()
        state.pointee.compactHeader()
        // The state block goes too: an idle stream keeps only its header and position.
        if let header = state.pointee.header {
            parked = (header, state.pointee.fedTotal)
            state.pointee.releaseStorage()
            state.deinitialize(count: 1)
            state.deallocate()
            self.state = nil
        }
        return true
    }

    // MARK: Feeding

    private func parse(_ base: UnsafeRawPointer, _ count: Int) throws(StreamError) -> Int {
        let state: UnsafeMutablePointer<XMLStreamParserState> = self.state
        if state.pointee.context == nil {
            state.pointee.restoreBuffers()
            try replaceContext(midStreamAt: state.pointee.fedTotal)
        }
        let callStart = state.pointee.fedTotal
        if callStart == 0, base.load(as: UInt8.self) == 0x16 {
            throw fail(XMLStreamParserErrors.tlsHandshake)
        }
        var offset = 0
        while offset < count {
            let length = min(count - offset, Self.maxSlice)
            if state.pointee.fedTotal < 4 {
                try checkStreamStart(base + offset, length)
            }
            state.pointee.sliceStart = state.pointee.fedTotal
            state.pointee.fedTotal += length
            let status = xmlParseChunk(
                state.pointee.context, (base + offset).assumingMemoryBound(to: CChar.self), Int32(length), 0)
            if let failure = state.pointee.failure { throw failure }
            if let stop = state.pointee.stopPosition {
                return min(max(stop - callStart, 0), count)
            }
            if let recycle = state.pointee.recyclePosition {
                offset += recycle - state.pointee.sliceStart
                try replaceContext(midStreamAt: recycle)
                continue
            }
            if status != 0 {
                throw fail(XMLStreamParserErrors.libxml2(code: status, message: nil))
            }
            offset += length
            try checkUnfinishedSizes()
        }
        return count
    }

    /// Refuses UTF-16, UTF-32 and EBCDIC by their first bytes, before libxml2 converts them.
    private func checkStreamStart(_ bytes: UnsafeRawPointer, _ count: Int) throws(StreamError) {
        let wanted = min(4 - state.pointee.streamStart.count, count)
        for index in 0..<wanted { state.pointee.streamStart.append(bytes.load(fromByteOffset: index, as: UInt8.self)) }
        if XMLStreamEncoding.isForeignStart(state.pointee.streamStart) {
            throw fail(XMLStreamParserErrors.encoding(nil))
        }
    }

    /// Bytes that gave no callback yet (a huge start tag or text node still arriving) count too.
    private func checkUnfinishedSizes() throws(StreamError) {
        let state: UnsafeMutablePointer<XMLStreamParserState> = self.state
        let limits = state.pointee.limits
        if state.pointee.header == nil {
            if state.pointee.fedTotal > limits.maxHeaderBytes {
                throw fail(XMLStreamParserErrors.headerTooLarge(limits.maxHeaderBytes))
            }
        } else if !state.pointee.rootClosed,
            state.pointee.fedTotal - state.pointee.boundary > limits.maxStanzaBytes
        {
            throw fail(XMLStreamParserErrors.stanzaTooLarge(limits.maxStanzaBytes))
        }
    }

    private func fail(_ error: StreamError) -> StreamError {
        state.pointee.fail(error)
        return state.pointee.failure ?? error
    }

    // MARK: Replacing the libxml2 context

    private func replaceContext() {
        if let context = state.pointee.context { xmlFreeParserCtxt(context) }
        state.pointee.context = nil
        state.pointee.names.removeAll()
        state.pointee.context = XMLStreamParserContext.make(for: state)
    }

    /// Swaps in a fresh context (and dictionary) between two stanzas, and replays the root's
    /// namespace declarations to it so the rest of the stream parses as before.
    private func replaceContext(midStreamAt position: Int) throws(StreamError) {
        let state: UnsafeMutablePointer<XMLStreamParserState> = self.state
        guard let header = state.pointee.header else { return }
        state.pointee.recyclePosition = nil
        replaceContext()
        var replay: [UInt8] = []
        XMLSerializer.writeOpenTag(
            prefixedName: header.prefix.map { "\($0):\(header.name)" } ?? header.name,
            declarations: header.namespaceDeclarations.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
            attributes: [], to: &replay)
        state.pointee.depth = 0
        state.pointee.positionOffset = 0
        state.pointee.replayingHeader = true
        let status = replay.withUnsafeBufferPointer {
            $0.withMemoryRebound(to: CChar.self) { xmlParseChunk(state.pointee.context, $0.baseAddress, Int32($0.count), 0) }
        }
        guard status == 0, state.pointee.failure == nil, !state.pointee.replayingHeader, state.pointee.depth == 1 else {
            throw fail(
                StreamError(.internalServerError, text: "The XML parser could not renew its context mid-stream."))
        }
        state.pointee.positionOffset = position - replay.count
        state.pointee.boundary = position
        state.pointee.fedTotal = position
    }
}
