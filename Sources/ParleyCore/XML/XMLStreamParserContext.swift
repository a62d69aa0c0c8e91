import CLibXML2

/// The libxml2 side of `XMLStreamParser`: the SAX2 handler and the push-parser context.
///
/// Safety rules (RFC 6120 §11.1 and XXE / billion-laughs hardening):
/// - never `XML_PARSE_NOENT`, `DTDLOAD` or `HUGE`; `NONET` always;
/// - a DOCTYPE fails the stream in `internalSubset`, before libxml2 reads any declaration;
/// - `getEntity` knows no entity, so `&foo;` is libxml2's fatal error 26;
/// - comments and processing instructions fail the stream;
/// - no encoding but UTF-8: `XML_PARSE_IGNORE_ENC`, see `XMLStreamEncoding`;
/// - errors come through this context's structured handler (`serror`), never libxml2's
///   process-wide hooks, which FoundationXML sets in the same process.
enum XMLStreamParserContext {
    typealias State = UnsafeMutablePointer<XMLStreamParserState>

    static let options = Int32(
        XML_PARSE_NONET.rawValue | XML_PARSE_NOCDATA.rawValue | XML_PARSE_NOERROR.rawValue
            | XML_PARSE_NOWARNING.rawValue | XML_PARSE_IGNORE_ENC.rawValue)

    /// A new push-parser context whose callbacks work on `state`.
    static func make(for state: State) -> xmlParserCtxtPtr {
        var handler = xmlSAXHandler()
        handler.initialized = UInt32(XML_SAX2_MAGIC)
        handler.startDocument = { user in
            user.unsafelyUnwrapped.assumingMemoryBound(to: XMLStreamParserState.self).pointee.startDocument()
        }
        handler.startElementNs = { user, localName, prefix, uri, namespaceCount, namespaces, attributeCount, _, attributes in
            user.unsafelyUnwrapped.assumingMemoryBound(to: XMLStreamParserState.self).pointee.startElement(
                localName.unsafelyUnwrapped, prefix, uri, Int(namespaceCount), namespaces, Int(attributeCount),
                attributes)
        }
        handler.endElementNs = { user, _, _, _ in
            user.unsafelyUnwrapped.assumingMemoryBound(to: XMLStreamParserState.self).pointee.endElement()
        }
        let characters: charactersSAXFunc = { user, bytes, count in
            user.unsafelyUnwrapped.assumingMemoryBound(to: XMLStreamParserState.self).pointee.characters(
                bytes.unsafelyUnwrapped, Int(count))
        }
        handler.characters = characters
        handler.ignorableWhitespace = characters
        handler.getEntity = { _, _ in nil }
        handler.getParameterEntity = { _, _ in nil }
        handler.internalSubset = { user, _, _, _ in
            failStream(user, XMLStreamParserErrors.doctype)
        }
        handler.externalSubset = { user, _, _, _ in
            failStream(user, XMLStreamParserErrors.doctype)
        }
        handler.entityDecl = { user, _, _, _, _, _ in
            failStream(user, XMLStreamParserErrors.entityDeclaration)
        }
        handler.comment = { user, _ in
            failStream(user, XMLStreamParserErrors.comment)
        }
        handler.processingInstruction = { user, target, _ in
            let name = target.map { String(cString: $0) } ?? ""
            failStream(user, XMLStreamParserErrors.processingInstruction(name))
        }
        handler.serror = { user, error in
            guard let user, let error else { return }
            let state = user.assumingMemoryBound(to: XMLStreamParserState.self)
            // Warnings (a relative namespace URI, an XML 1.x version) are not errors.
            guard error.pointee.level.rawValue >= XML_ERR_ERROR.rawValue else { return }
            guard state.pointee.failure == nil, state.pointee.stopPosition == nil,
                state.pointee.recyclePosition == nil
            else { return }
            state.pointee.failure = XMLStreamParserErrors.libxml2(
                code: error.pointee.code, message: XMLStreamParserErrors.message(error.pointee.message))
            // What libxml2 itself does on a fatal error; stopping the parser from inside its error
            // reporting is not safe in 2.9 (the input buffer would be freed under the caller).
            state.pointee.context?.pointee.disableSAX = 1
        }

        guard let context = xmlCreatePushParserCtxt(&handler, UnsafeMutableRawPointer(state), nil, 0, nil) else {
            fatalError("libxml2 could not allocate a push parser context")
        }
        configure(context, limits: state.pointee.limits)
        return context
    }

    /// Options and the dictionary limit; needed again after `xmlCtxtResetPush`, and the limit
    /// must come after the options (`xmlCtxtUseOptions` sets libxml2's default of 10 MB).
    static func configure(_ context: xmlParserCtxtPtr, limits: XMLStreamParser.Limits) {
        xmlCtxtUseOptions(context, options)
        xmlDictSetLimit(context.pointee.dict, dictionaryLimit(limits))
    }

    /// The dictionary's memory limit: about 1 MB, so a peer inventing names cannot grow it to
    /// libxml2's default 10 MB. libxml2 adds string pools of 4× the previous size while the total
    /// is under the limit, so a context replaced once its pools pass a quarter of the limit
    /// (`dictionaryRecycleUsage`) has room for any one stanza and header.
    static func dictionaryLimit(_ limits: XMLStreamParser.Limits) -> Int {
        max(1_000_000, 4 * (limits.maxStanzaBytes + limits.maxHeaderBytes))
    }

    static func dictionaryRecycleUsage(_ limits: XMLStreamParser.Limits) -> Int {
        dictionaryLimit(limits) / 4
    }

    /// Starts a new document on an existing context, keeping its handler and dictionary.
    static func reset(_ context: xmlParserCtxtPtr, state: State) {
        xmlCtxtResetPush(context, nil, 0, nil, nil)
        // libxml2 2.9's xmlCtxtReset keeps these: stale namespace bindings of the old root
        // would otherwise resolve prefixes the new stream never declared.
        context.pointee.nsNr = 0
        context.pointee.progressive = 0
        context.pointee.userData = UnsafeMutableRawPointer(state)
        configure(context, limits: state.pointee.limits)
    }

    /// Whether libxml2 holds nothing but whitespace it has not reported yet: it keeps the
    /// blanks after a stanza until the next `<` tells it they were not text.
    static func onlyWhitespaceBuffered(_ context: xmlParserCtxtPtr) -> Bool {
        guard let input = context.pointee.input, var cursor = input.pointee.cur, let end = input.pointee.end else {
            return true
        }
        while cursor < end {
            switch cursor.pointee {
            case 0x20, 0x09, 0x0A, 0x0D: cursor += 1
            default: return false
            }
        }
        return true
    }
}

private func failStream(_ user: UnsafeMutableRawPointer?, _ error: StreamError) {
    user.unsafelyUnwrapped.assumingMemoryBound(to: XMLStreamParserState.self).pointee.fail(error)
}
