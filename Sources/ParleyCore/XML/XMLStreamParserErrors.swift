import CLibXML2

/// How the stream parser turns what went wrong into the stream error RFC 6120 §4.9.3 names.
enum XMLStreamParserErrors {
    // MARK: Errors found by the parser itself

    static let doctype = StreamError(
        .restrictedXML, text: "The stream contains a document type declaration, which XMPP forbids.")
    static let entityDeclaration = StreamError(
        .restrictedXML, text: "The stream declares an entity, which XMPP forbids.")
    static let comment = StreamError(
        .restrictedXML, text: "The stream contains an XML comment, which XMPP forbids.")

    static func processingInstruction(_ target: String) -> StreamError {
        StreamError(
            .restrictedXML,
            text: "The stream contains the processing instruction '\(clip(target))', which XMPP forbids.")
    }

    static func rootNamespace(_ namespace: String?) -> StreamError {
        if let namespace {
            return StreamError(
                .invalidNamespace,
                text: "The stream's root element is in namespace '\(clip(namespace))' instead of \(XMLNamespace.streams).")
        }
        return StreamError(
            .invalidNamespace,
            text: "The stream's root element has no namespace; it must be in \(XMLNamespace.streams).")
    }

    static func rootName(_ name: String) -> StreamError {
        StreamError(
            .invalidNamespace,
            text: "The stream's root element is '\(clip(name))' instead of 'stream'.")
    }

    /// 0x16 (a TLS handshake record) can never start XML; naming it tells the operator of a
    /// misconfigured peer what went wrong, where libxml2 would only say "Document is empty".
    static let tlsHandshake = StreamError(
        .notWellFormed,
        text: "The stream starts with a TLS handshake, not XML: on this port TLS begins with STARTTLS; "
            + "TLS from the first byte needs the direct TLS port (XEP-0368).")

    static func headerTooLarge(_ limit: Int) -> StreamError {
        StreamError(.policyViolation, text: "The stream header is larger than \(limit) bytes.")
    }

    static func stanzaTooLarge(_ limit: Int) -> StreamError {
        StreamError(.policyViolation, text: "A stanza is larger than \(limit) bytes.")
    }

    static func tooDeep(_ limit: Int) -> StreamError {
        StreamError(.policyViolation, text: "A stanza nests elements more than \(limit) levels deep.")
    }

    /// Ill-formed UTF-8 that libxml2 let through (see UTF8Validation).
    static let invalidUTF8 = StreamError(.unsupportedEncoding, text: "The stream is not in UTF-8: an ill-formed byte sequence.")

    static let textBetweenStanzas = StreamError(
        .badFormat, text: "The stream contains character data other than whitespace between stanzas.")

    static func xmlVersion(_ version: String) -> StreamError {
        StreamError(
            .unsupportedVersion,
            text: "The XML declaration asks for XML version '\(clip(version))'; XMPP uses XML 1.0.")
    }

    static func encoding(_ name: String?) -> StreamError {
        if let name {
            return StreamError(
                .unsupportedEncoding,
                text: "The stream is declared in encoding '\(clip(name))'; XMPP streams must be UTF-8.")
        }
        return StreamError(.unsupportedEncoding, text: "The stream is not encoded in UTF-8.")
    }

    static let fedAfterStop = StreamError(
        .internalServerError, text: "The XML parser was fed after it stopped, without a reset.")

    // MARK: Errors reported by libxml2

    /// The stream error for an error or fatal error that libxml2 reported.
    static func libxml2(code: Int32, message: String?) -> StreamError {
        let detail = message.map(clip) ?? "libxml2 error \(code)"
        switch code {
        case Int32(XML_NS_ERR_UNDEFINED_NAMESPACE.rawValue), Int32(XML_NS_ERR_XML_NAMESPACE.rawValue),
            Int32(XML_NS_ERR_EMPTY.rawValue):
            return StreamError(.badNamespacePrefix, text: "The stream uses a namespace prefix wrongly: \(detail).")
        case Int32(XML_ERR_UNDECLARED_ENTITY.rawValue), Int32(XML_WAR_UNDECLARED_ENTITY.rawValue),
            Int32(XML_ERR_ENTITY_IS_EXTERNAL.rawValue), Int32(XML_ERR_ENTITY_IS_PARAMETER.rawValue),
            Int32(XML_ERR_ENTITY_PE_INTERNAL.rawValue), Int32(XML_ERR_ENTITY_LOOP.rawValue),
            Int32(XML_ERR_ENTITY_BOUNDARY.rawValue), Int32(XML_ERR_ENTITY_PROCESSING.rawValue),
            Int32(XML_ERR_PEREF_AT_EOF.rawValue)...Int32(XML_ERR_PEREF_SEMICOL_MISSING.rawValue):
            return StreamError(
                .restrictedXML,
                text: "The stream uses an entity other than the five predefined ones, which XMPP forbids: \(detail).")
        case Int32(XML_ERR_UNKNOWN_ENCODING.rawValue), Int32(XML_ERR_UNSUPPORTED_ENCODING.rawValue),
            Int32(XML_ERR_INVALID_ENCODING.rawValue):
            return StreamError(.unsupportedEncoding, text: "The stream is not in UTF-8: \(detail).")
        case Int32(XML_ERR_UNKNOWN_VERSION.rawValue):
            return StreamError(.unsupportedVersion, text: "The XML declaration names a version other than 1.0: \(detail).")
        case Int32(XML_ERR_NO_MEMORY.rawValue):
            return StreamError(
                .resourceConstraint, text: "The stream exhausted the memory the XML parser allows it: \(detail).")
        case Int32(XML_ERR_INTERNAL_ERROR.rawValue)
        where detail.contains("depth") || detail.contains("Huge") || detail.contains("huge"):
            return StreamError(.policyViolation, text: "The stream exceeded a limit of the XML parser: \(detail).")
        default:
            return StreamError(.notWellFormed, text: "The stream is not well-formed XML: \(detail).")
        }
    }

    /// libxml2's message on one line, without its trailing newline, and not endless.
    static func message(_ cString: UnsafePointer<CChar>?) -> String? {
        guard let cString else { return nil }
        var text = String(cString: cString)
        while let last = text.last, last == "\n" || last == " " { text.removeLast() }
        text = text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).joined(separator: " ")
        return text.isEmpty ? nil : text
    }

    /// Peer-supplied text quoted in an error, cut to a readable length.
    static func clip(_ text: String) -> String {
        text.count > 160 ? String(text.prefix(160)) + "…" : text
    }
}
