import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyStream
import Testing

/// A broken stream ends with one `StreamError` through `errorCaught`, and nothing after it.
@Suite struct DecoderErrorTests {
    @Test func notWellFormedIsReportedOnceAndNothingMoreIsRead() throws {
        let (channel, probe) = try EmbeddedChannel.decoding()
        try channel.feed(SampleStreams.clientHeader + "<presence/>")
        #expect(try channel.drainEvents().count == 2)

        // Elements before the fault in the same read still arrive.
        try channel.feed("<iq type='get' id='ok'/><message><body>hi</message><presence/>")
        #expect(try channel.drainEvents().map(\.element?.id) == ["ok"])
        #expect(probe.streamErrors.map(\.condition) == [.notWellFormed])

        // The stream is dead: well-formed input afterwards yields neither events nor errors.
        try channel.feed("<presence/><message><body>again</body></message></stream:stream>")
        try channel.feed(SampleStreams.clientHeader)
        #expect(try channel.drainEvents().isEmpty)
        #expect(probe.errors.count == 1)
    }

    static let faults: [(String, StreamErrorCondition)] = [
        ("<message><body>unclosed</message>", .notWellFormed),
        ("<presence type='unquoted attr/>", .notWellFormed),
        ("<presence a='1' a='2'/>", .notWellFormed),
        ("<message>\u{01}</message>", .notWellFormed),
        ("<foo:bar xmlns:baz='urn:x'/>", .badNamespacePrefix),
        ("<message>&undeclared;</message>", .restrictedXML),
        ("<!-- a comment -->", .restrictedXML),
        ("<?php echo 1 ?>", .restrictedXML),
        ("text between stanzas", .badFormat),
    ]

    @Test(arguments: faults)
    func everyKindOfFaultFailsTheStream(fault: String, condition: StreamErrorCondition) throws {
        for chunk in [Int.max, 1] {
            let (channel, probe) = try EmbeddedChannel.decoding()
            try channel.feed(SampleStreams.clientHeader)
            // Also one byte at a time, so no fault is caught only because it arrived whole.
            try channel.feed(Array(fault.utf8), chunkSizes: repeatElement(chunk, count: .max))
            try channel.feed("<presence/>")
            #expect(try channel.drainEvents().count == 1, "\(fault)")
            #expect(probe.streamErrors.map(\.condition) == [condition], "\(fault), chunk \(chunk)")
        }
    }

    @Test func notWellFormedOneBytePerRead() throws {
        let (channel, probe) = try EmbeddedChannel.decoding()
        let bytes = Array((SampleStreams.clientHeader + "<message><body>hi</message>").utf8)
        try channel.feed(bytes, chunkSizes: repeatElement(1, count: .max))
        #expect(probe.streamErrors.map(\.condition) == [.notWellFormed])
    }

    @Test func doctypeIsRestrictedXML() throws {
        let (channel, probe) = try EmbeddedChannel.decoding()
        try channel.feed(
            "<?xml version='1.0'?><!DOCTYPE stream:stream [<!ENTITY lol 'lol'>]>"
                + "<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>")
        #expect(try channel.drainEvents().isEmpty)
        #expect(probe.streamErrors.map(\.condition) == [.restrictedXML])
    }

    @Test func doctypeFedOneBytePerReadIsRestrictedXML() throws {
        let (channel, probe) = try EmbeddedChannel.decoding()
        let bytes = Array("<?xml version='1.0'?><!DOCTYPE foo SYSTEM 'file:///etc/passwd'><stream:stream>".utf8)
        try channel.feed(bytes, chunkSizes: repeatElement(1, count: .max))
        #expect(try channel.drainEvents().isEmpty)
        #expect(probe.streamErrors.map(\.condition) == [.restrictedXML])
    }

    static let smallLimits = XMLStreamParser.Limits(maxStanzaBytes: 512)

    @Test func stanzaWithinTheLimitPasses() throws {
        let (channel, probe) = try EmbeddedChannel.decoding(limits: Self.smallLimits)
        try channel.feed(SampleStreams.clientHeader)
        try channel.feed("<message><body>\(String(repeating: "a", count: 400))</body></message>")
        #expect(try channel.drainEvents().count == 2)
        #expect(probe.errors.isEmpty)
    }

    @Test(arguments: [Int.max, 1, 64])
    func oversizeStanzaIsAPolicyViolation(chunk: Int) throws {
        let (channel, probe) = try EmbeddedChannel.decoding(limits: Self.smallLimits)
        try channel.feed(SampleStreams.clientHeader)
        let big = "<message><body>\(String(repeating: "a", count: 2_000))</body></message><presence/>"
        try channel.feed(Array(big.utf8), chunkSizes: repeatElement(chunk, count: .max))
        #expect(try channel.drainEvents().count == 1)
        #expect(probe.streamErrors.map(\.condition) == [.policyViolation])
    }

    /// A stanza that never ends produces no callback; the size check after each read catches it.
    @Test func unterminatedHugeTextIsAPolicyViolation() throws {
        let (channel, probe) = try EmbeddedChannel.decoding(limits: Self.smallLimits)
        try channel.feed(SampleStreams.clientHeader + "<message><body>")
        for _ in 0..<20 { try channel.feed(String(repeating: "b", count: 100)) }
        #expect(probe.streamErrors.map(\.condition) == [.policyViolation])
    }

    /// Whitespace keepalives between stanzas do not count towards the next stanza's size.
    @Test func keepalivesDoNotCountTowardsTheLimit() throws {
        let (channel, probe) = try EmbeddedChannel.decoding(limits: Self.smallLimits)
        try channel.feed(SampleStreams.clientHeader)
        for _ in 0..<10 { try channel.feed(String(repeating: " ", count: 100)) }
        try channel.feed("<message><body>\(String(repeating: "a", count: 400))</body></message>")
        #expect(try channel.drainEvents().count == 2)
        #expect(probe.errors.isEmpty)
    }
}
