import ParleyCore
import Testing

private let header = ParserTesting.streamHeader

/// A `<message>` of exactly `size` bytes.
private func message(ofSize size: Int) -> String {
    let shell = "<message><body></body></message>"
    return "<message><body>" + String(repeating: "x", count: size - shell.utf8.count) + "</body></message>"
}

@Suite("XMLStreamParser: limits")
struct XMLStreamParserLimitsTests {
    static let chunkings: [ParserTesting.Chunking] = [.whole, .fixed(1), .fixed(100), .fixed(4096)]

    @Test(arguments: chunkings)
    func stanzaSizeLimitIsExact(_ chunking: ParserTesting.Chunking) throws {
        let limits = XMLStreamParser.Limits(maxStanzaBytes: 1000)
        // Keepalive whitespace between stanzas does not count towards the next one.
        let fits = header + message(ofSize: 1000) + "\n  \n" + message(ofSize: 1000)
        #expect(ParserTesting.stanzas(try ParserTesting.events(fits, chunking, limits: limits)).count == 2)
        let error = ParserTesting.error(header + message(ofSize: 1000) + message(ofSize: 1001), chunking, limits: limits)
        #expect(error?.condition == .policyViolation)
    }

    @Test(arguments: chunkings)
    func manySmallElementsExceedTheDefaultLimit(_ chunking: ParserTesting.Chunking) {
        let big = header + "<message>" + String(repeating: "<a/>", count: 70_000) + "</message>"
        let error = ParserTesting.error(big, chunking)
        #expect(error?.condition == .policyViolation)
        #expect(error?.text == "A stanza is larger than 262144 bytes.")
    }

    @Test func hugeTextNodeIsRefusedBeforeItEnds() throws {
        let parser = XMLStreamParser()
        _ = try parser.feed(Array((header + "<message><body>").utf8))
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 4096)
        var fed = 0
        let error = #expect(throws: StreamError.self) {
            while fed < 10_000_000 {
                _ = try parser.feed(chunk)
                fed += chunk.count
            }
        }
        #expect(error?.condition == .policyViolation)
        #expect(fed <= 262_144)
        #expect(fed >= 262_144 - 2 * 4096)
    }

    @Test func hugeStartTagIsRefusedBeforeItEnds() throws {
        let parser = XMLStreamParser(limits: .init(maxStanzaBytes: 10_000))
        _ = try parser.feed(Array((header + "<message to='").utf8))
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 1000)
        var fed = 0
        let error = #expect(throws: StreamError.self) {
            while fed < 1_000_000 {
                _ = try parser.feed(chunk)
                fed += chunk.count
            }
        }
        #expect(error?.condition == .policyViolation)
        #expect(fed <= 10_000)
    }

    @Test func hugeStreamHeaderIsRefused() {
        let attribute = String(repeating: "a", count: 20_000)
        let error = ParserTesting.error(
            "<stream:stream xmlns:stream='http://etherx.jabber.org/streams' to='\(attribute)'>", .fixed(4096))
        #expect(error?.condition == .policyViolation)
        let unfinished = ParserTesting.error("<stream:stream to='\(attribute)", .fixed(4096))
        #expect(unfinished?.condition == .policyViolation)
        let whitespace = ParserTesting.error(String(repeating: " ", count: 20_000), .fixed(4096))
        #expect(whitespace?.condition == .policyViolation)
    }

    @Test(arguments: [1, 3, 32])
    func depthLimitIsExact(_ maxDepth: Int) throws {
        let limits = XMLStreamParser.Limits(maxDepth: maxDepth)
        func nested(_ depth: Int) -> String {
            // The stanza is depth 1; `depth` levels in all.
            String(repeating: "<a>", count: depth) + String(repeating: "</a>", count: depth)
        }
        let events = try ParserTesting.events(header + nested(maxDepth), limits: limits)
        #expect(ParserTesting.stanzas(events).count == 1)
        let error = ParserTesting.error(header + nested(maxDepth + 1), limits: limits)
        #expect(error?.condition == .policyViolation)
        #expect(error?.text == "A stanza nests elements more than \(maxDepth) levels deep.")
    }

    @Test func defaultDepthRefusesDeepNesting() {
        let error = ParserTesting.error(header + String(repeating: "<a>", count: 1000), .fixed(512))
        #expect(error?.condition == .policyViolation)
    }

    @Test func longStreamWithManyUniqueNamesKeepsWorking() throws {
        // About 6 MB of names and namespaces no two alike: far beyond libxml2's dictionary limit
        // for one context, so the parser must renew its context between stanzas.
        let count = 80_000
        var bytes = Array(header.utf8)
        for index in 0..<count {
            bytes += Array("<message id='m\(index)'><x-element-name-\(index) xmlns='urn:example:unique:namespace:\(index)'/></message>".utf8)
            if index % 1000 == 0 { bytes += Array("\n".utf8) }
        }
        bytes += Array("<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/><presence/>".utf8)

        let parser = XMLStreamParser()
        var stanzas = 0
        var last: XMLElement?
        var offset = 0
        var stoppedAt: Int?
        while offset < bytes.count, stoppedAt == nil {
            let end = min(offset + 4096, bytes.count)
            let consumed = try ParserTesting.feed(parser, bytes, offset..<end) { event in
                guard case .stanza(let element) = event else { return .continue }
                if element.name == "starttls" { return .stop }
                stanzas += 1
                last = element
                return .continue
            }
            if consumed < end - offset { stoppedAt = offset + consumed }
            offset = end
        }
        #expect(stanzas == count)
        #expect(last?.id == "m\(count - 1)")
        #expect(last?.elements.first?.name == "x-element-name-\(count - 1)")
        #expect(last?.elements.first?.namespace == "urn:example:unique:namespace:\(count - 1)")
        #expect(last?.namespace == XMLNamespace.client)
        // Positions stay exact across context renewals.
        #expect(stoppedAt == bytes.count - "<presence/>".utf8.count)
    }
}
