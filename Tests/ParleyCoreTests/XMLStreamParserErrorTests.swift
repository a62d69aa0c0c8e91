import ParleyCore
import Testing

private let header = ParserTesting.streamHeader
private let bareHeader =
    "<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' version='1.0'>"

struct ErrorCase: CustomStringConvertible, Sendable {
    var name: String
    var bytes: [UInt8]
    var condition: StreamErrorCondition

    init(_ name: String, _ text: String, _ condition: StreamErrorCondition) {
        self.init(name, Array(text.utf8), condition)
    }

    init(_ name: String, _ bytes: [UInt8], _ condition: StreamErrorCondition) {
        self.name = name
        self.bytes = bytes
        self.condition = condition
    }

    var description: String { name }
}

private let billionLaughs = """
    <?xml version="1.0"?>
    <!DOCTYPE lolz [
     <!ENTITY lol "lol">
     <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
     <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
     <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
     <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
     <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
     <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
     <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
     <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
     <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
    ]>
    <stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>
    <message><body>&lol9;</body></message>
    """

private let xxe = """
    <?xml version="1.0"?>
    <!DOCTYPE stream:stream [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
    <stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>
    <message><body>&xxe;</body></message>
    """

private let errorCases: [ErrorCase] = [
    // Restricted XML (RFC 6120 §11.1).
    ErrorCase("billion laughs", billionLaughs, .restrictedXML),
    ErrorCase("XXE with a SYSTEM entity", xxe, .restrictedXML),
    ErrorCase("external DTD", "<!DOCTYPE stream SYSTEM 'http://example.com/x.dtd'>" + bareHeader, .restrictedXML),
    ErrorCase("undefined entity in text", header + "<message><body>&foo;</body></message>", .restrictedXML),
    ErrorCase("undefined entity in an attribute", header + "<message id='&foo;'/>", .restrictedXML),
    ErrorCase("xxe reference without a DTD", header + "<message><body>&xxe;</body></message>", .restrictedXML),
    ErrorCase("comment between stanzas", header + "<!-- hello --><presence/>", .restrictedXML),
    ErrorCase("comment in a stanza", header + "<message><!-- hello --></message>", .restrictedXML),
    ErrorCase("comment before the root", "<?xml version='1.0'?><!-- hi -->" + bareHeader, .restrictedXML),
    ErrorCase("processing instruction", header + "<?php echo 1; ?><presence/>", .restrictedXML),
    ErrorCase("processing instruction before the root", "<?xml-stylesheet href='a'?>" + bareHeader, .restrictedXML),
    // Not well-formed.
    ErrorCase("mismatched end tag", header + "<message><body>hi</message>", .notWellFormed),
    ErrorCase("root closed inside a stanza", header + "<message><body>hi</body></stream:stream>", .notWellFormed),
    ErrorCase("unclosed start tag", header + "<message to='a'<body/></message>", .notWellFormed),
    ErrorCase("unquoted attribute", header + "<message to=a/><presence/>", .notWellFormed),
    ErrorCase("duplicate attribute", header + "<message to='a' to='b'/><presence/>", .notWellFormed),
    ErrorCase("bare ampersand", header + "<message><body>a & b; c</body></message>", .notWellFormed),
    ErrorCase("bare less-than in attribute", header + "<message id='<'/><presence/>", .notWellFormed),
    ErrorCase("invalid character reference", header + "<message><body>&#0;</body></message>", .notWellFormed),
    ErrorCase("control character", header + "<message><body>\u{1}</body></message>", .notWellFormed),
    ErrorCase(
        "invalid UTF-8 C3 28 in text", Array((header + "<message><body>").utf8) + [0xC3, 0x28] + Array("</body></message>".utf8),
        .notWellFormed),
    ErrorCase(
        "invalid UTF-8 FF in text", Array((header + "<message><body>").utf8) + [0xFF] + Array("</body></message>".utf8),
        .notWellFormed),
    ErrorCase(
        "invalid UTF-8 in an attribute", Array((header + "<message id='").utf8) + [0xC3, 0x28] + Array("'/><presence/>".utf8),
        .notWellFormed),
    ErrorCase(
        "invalid UTF-8 in a name", Array((header + "<mess").utf8) + [0xFE] + Array("age/><presence/>".utf8),
        .notWellFormed),
    ErrorCase(
        "overlong UTF-8", Array((header + "<message><body>").utf8) + [0xC0, 0xBC] + Array("</body></message>".utf8),
        .notWellFormed),
    ErrorCase("bytes after the root closed", header + "</stream:stream><presence/>", .notWellFormed),
    ErrorCase("text after the root closed", header + "</stream:stream>trailing garbage", .notWellFormed),
    ErrorCase("a second root", header + "</stream:stream>" + bareHeader, .notWellFormed),
    ErrorCase("text before the root", "hello" + bareHeader, .notWellFormed),
    ErrorCase("XML declaration mid-stream", header + "<?xml version='1.0'?><presence/>", .notWellFormed),
    // Namespaces.
    ErrorCase("root in the wrong namespace", "<stream:stream xmlns:stream='urn:wrong'>", .invalidNamespace),
    ErrorCase("root in no namespace", "<stream>", .invalidNamespace),
    ErrorCase("root in the content namespace", "<stream xmlns='jabber:client'>", .invalidNamespace),
    ErrorCase(
        "root not named stream", "<stream:features xmlns:stream='http://etherx.jabber.org/streams'>",
        .invalidNamespace),
    ErrorCase("undeclared prefix on the root", "<stream:stream xmlns='jabber:client'>", .badNamespacePrefix),
    ErrorCase("undeclared prefix on a stanza", header + "<foo:message/><presence/>", .badNamespacePrefix),
    ErrorCase("undeclared prefix on a child", header + "<message><x:y/></message>", .badNamespacePrefix),
    ErrorCase("undeclared attribute prefix", header + "<message foo:id='1'/><presence/>", .badNamespacePrefix),
    // XML declaration.
    ErrorCase("ISO-8859-1 declared", "<?xml version='1.0' encoding='ISO-8859-1'?>" + bareHeader, .unsupportedEncoding),
    ErrorCase("US-ASCII declared", "<?xml version='1.0' encoding='US-ASCII'?>" + bareHeader, .unsupportedEncoding),
    ErrorCase("UTF-16 declared", "<?xml version='1.0' encoding='UTF-16'?>" + bareHeader, .unsupportedEncoding),
    ErrorCase("unknown encoding", "<?xml version='1.0' encoding='x-klingon'?>" + bareHeader, .unsupportedEncoding),
    ErrorCase(
        "UTF-16 bytes", [0xFF, 0xFE] + Array("<stream>".utf8).flatMap { [$0, 0] } + Array(repeating: 0x20, count: 64),
        .unsupportedEncoding),
    ErrorCase("XML 1.1", "<?xml version='1.1'?>" + bareHeader, .unsupportedVersion),
    ErrorCase("XML 2.0", "<?xml version='2.0'?>" + bareHeader, .unsupportedVersion),
    // Other.
    ErrorCase("text between stanzas", header + "<presence/>hello<presence/>", .badFormat),
]

@Suite("XMLStreamParser: errors")
struct XMLStreamParserErrorTests {
    @Test(arguments: errorCases)
    func wholeInput(_ errorCase: ErrorCase) {
        let error = ParserTesting.error(errorCase.bytes)
        #expect(error?.condition == errorCase.condition, "\(error?.description ?? "no error")")
        #expect(error?.text?.isEmpty == false)
    }

    @Test(arguments: errorCases)
    func byteByByte(_ errorCase: ErrorCase) {
        let error = ParserTesting.error(errorCase.bytes, .fixed(1))
        #expect(error?.condition == errorCase.condition, "\(error?.description ?? "no error")")
    }

    @Test func errorsAreSticky() {
        let parser = XMLStreamParser()
        let first = #expect(throws: StreamError.self) {
            _ = try parser.feed(Array((header + "<message><!-- x --></message>").utf8))
        }
        let second = #expect(throws: StreamError.self) { _ = try parser.feed(Array("<presence/>".utf8)) }
        #expect(first == second)
    }

    @Test func doctypeIsRefusedBeforeItsSubsetArrives() {
        // Only the start of an internal subset: the error must not wait for the rest.
        let error = ParserTesting.error("<?xml version='1.0'?><!DOCTYPE x [<!ENTITY a 'b'>")
        #expect(error?.condition == .restrictedXML)
    }

    @Test func errorTextSaysWhatHappened() {
        #expect(
            ParserTesting.error("<stream:stream xmlns:stream='urn:wrong'>")?.text
                == "The stream's root element is in namespace 'urn:wrong' instead of http://etherx.jabber.org/streams.")
        let mismatch = ParserTesting.error(header + "<message><body>hi</message>")
        #expect(mismatch?.text?.contains("mismatch") == true, "\(mismatch?.text ?? "")")
        let entity = ParserTesting.error(header + "<message><body>&foo;</body></message>")
        #expect(entity?.text?.contains("foo") == true, "\(entity?.text ?? "")")
    }
}
