import CLibXML2
import ParleyCore

#if canImport(Glibc)
import Glibc
#endif

/// Parley's stream parser against libxml2 alone: the same push parser, options and chunking,
/// with SAX2 callbacks that do nothing. The ratio is the price of building `XMLElement`s.
enum ParserBenchmark: Benchmark {
    static let name = "parser"
    static let summary = "XMLStreamParser vs raw libxml2 SAX on typical <message> stanzas"

    struct Options {
        var megabytes = 10.0
        var runs = 15
        var chunkSize = 4096
        /// "parley" or "raw" to run one side only (for profiling with callgrind).
        var only: String?
    }

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var remaining = arguments[...]
        while let flag = remaining.popFirst() {
            guard let value = remaining.popFirst() else { throw UsageError(description: "\(flag) needs a value") }
            switch flag {
            case "--megabytes": options.megabytes = Double(value) ?? options.megabytes
            case "--runs": options.runs = max(1, Int(value) ?? options.runs)
            case "--chunk": options.chunkSize = max(1, Int(value) ?? options.chunkSize)
            case "--only": options.only = value
            default:
                throw UsageError(
                    description: "unknown option \(flag) (--megabytes N, --runs N, --chunk BYTES, --only parley|raw)")
            }
        }
        return options
    }

    static func run(arguments: [String]) throws {
        let options = try parse(arguments)
        let (stream, stanzaCount) = makeStream(bytes: Int(options.megabytes * 1_000_000))
        print(
            "parser: \(stream.count) bytes, \(stanzaCount) stanzas (\(stream.count / stanzaCount) bytes each),"
                + " \(options.chunkSize)-byte chunks, \(options.runs) runs each, interleaved")

        var parley: [Double] = []
        var raw: [Double] = []
        for _ in 0..<options.runs {
            if options.only != "raw" {
                parley.append(try measure { try runParley(stream, chunkSize: options.chunkSize, expecting: stanzaCount) })
            }
            if options.only != "parley" {
                raw.append(measure { runRawLibXML2(stream, chunkSize: options.chunkSize) })
            }
        }
        if options.only != nil {
            print("ran \(options.only!) only: \(parley.min() ?? raw.min() ?? 0) s best")
            return
        }
        // Each run of Parley is followed by one of raw libxml2, so a pair shares the machine's
        // state: the median of the pairs' ratios is the figure least moved by a noisy host.
        let paired = zip(parley, raw).map { $1 / $0 }.sorted()
        parley.sort()
        raw.sort()

        func row(_ label: String, _ seconds: [Double]) {
            let best = seconds.first!
            let median = seconds[seconds.count / 2]
            let megabytes = Double(stream.count) / 1_000_000
            print(
                label.padding(to: 26)
                    + "best \(format(megabytes / best)) MB/s \(format(Double(stanzaCount) / best, 0)) stanzas/s"
                    + "   median \(format(megabytes / median)) MB/s \(format(Double(stanzaCount) / median, 0)) stanzas/s")
        }
        row("Parley XMLStreamParser", parley)
        row("raw libxml2 SAX2 (no-op)", raw)
        print(
            "ratio Parley/raw: best \(format(raw.first! / parley.first!, 3))"
                + ", median \(format(raw[raw.count / 2] / parley[parley.count / 2], 3))"
                + ", median of paired runs \(format(paired[paired.count / 2], 3))"
                + " (pairs \(format(paired.first!, 3))–\(format(paired.last!, 3)))")
    }

    // MARK: Input

    /// A c2s stream of chat messages as clients send them: addresses, id, type, xml:lang, a
    /// body of varying length, a receipt request (XEP-0184) and a chat state (XEP-0085).
    static func makeStream(bytes target: Int) -> ([UInt8], Int) {
        var stream = Array(
            ("<?xml version='1.0'?><stream:stream to='example.com' version='1.0' xml:lang='en' "
                + "xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>").utf8)
        let words = [
            "hello", "there", "how", "are", "you", "doing", "today", "I", "think", "the", "meeting", "moved",
            "to", "Thursday", "afternoon", "so", "we", "can", "talk", "later", "about", "release", "plans",
            "sounds", "good", "see", "tomorrow", "thanks", "a", "lot",
        ]
        var count = 0
        var seed: UInt64 = 0x5EED
        func next(_ bound: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(bound))
        }
        while stream.count < target {
            var body = ""
            let length = 60 + next(90)
            while body.utf8.count < length {
                if !body.isEmpty { body += " " }
                body += words[next(words.count)]
            }
            if count % 10 == 3 { body += " &amp; more" }
            let message =
                "<message to='contact\(next(200))@example.net' from='user\(next(50))@example.com/phone-\(next(9))'"
                + " id='msg-\(count)-\(String(next(1 << 24), radix: 16))' type='chat' xml:lang='en'>"
                + "<body>\(body)</body>"
                + "<request xmlns='urn:xmpp:receipts'/>"
                + "<active xmlns='http://jabber.org/protocol/chatstates'/>"
                + "</message>"
            stream += Array(message.utf8)
            count += 1
            if count % 50 == 0 { stream.append(UInt8(ascii: " ")) }  // a whitespace keepalive now and then
        }
        return (stream, count)
    }

    // MARK: Runs

    static func measure(_ body: () throws -> Void) rethrows -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try body()
        let elapsed = clock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    static func runParley(_ stream: [UInt8], chunkSize: Int, expecting expected: Int) throws {
        let parser = XMLStreamParser()
        var stanzas = 0
        var chats = 0
        try stream.withUnsafeBytes { (all: UnsafeRawBufferPointer) throws in
            var offset = 0
            while offset < all.count {
                let end = min(offset + chunkSize, all.count)
                try parser.feed(UnsafeRawBufferPointer(rebasing: all[offset..<end])) { event in
                    // Reads what a server reads of every stanza, so the parse cannot be skipped.
                    if case .stanza(let element) = event {
                        stanzas += 1
                        if element.type == "chat" { chats += 1 }
                    }
                    return .continue
                }
                offset = end
            }
        }
        guard stanzas == expected, chats == expected else {
            throw UsageError(description: "Parley saw \(stanzas) stanzas, expected \(expected)")
        }
    }

    static func runRawLibXML2(_ stream: [UInt8], chunkSize: Int) {
        var handler = xmlSAXHandler()
        handler.initialized = UInt32(XML_SAX2_MAGIC)
        handler.startElementNs = { _, _, _, _, _, _, _, _, _ in }
        handler.endElementNs = { _, _, _, _ in }
        handler.characters = { _, _, _ in }
        handler.ignorableWhitespace = handler.characters
        guard let context = xmlCreatePushParserCtxt(&handler, nil, nil, 0, nil) else { fatalError("libxml2") }
        defer { xmlFreeParserCtxt(context) }
        xmlCtxtUseOptions(
            context,
            // The options XMLStreamParser uses.
            Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOCDATA.rawValue | XML_PARSE_NOERROR.rawValue
                | XML_PARSE_NOWARNING.rawValue | XML_PARSE_IGNORE_ENC.rawValue))
        stream.withUnsafeBytes { all in
            let base = all.baseAddress!.assumingMemoryBound(to: CChar.self)
            var offset = 0
            while offset < all.count {
                let length = min(chunkSize, all.count - offset)
                if xmlParseChunk(context, base + offset, Int32(length), 0) != 0 { fatalError("libxml2 failed") }
                offset += length
            }
        }
    }

    static func format(_ value: Double, _ decimals: Int = 1) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        return decimals == 0 ? String(Int(rounded)) : String(rounded)
    }
}
