import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyStream
import Testing

/// In the spirit of swift-nio's `ByteToMessageDecoderVerifier`: however the bytes of a stream
/// are cut into reads, the decoder must produce the very same events.
@Suite struct DecoderDripFeedTests {
    /// The events for the whole session delivered in one read: the reference.
    static func referenceEvents() throws -> [XMLStreamEvent] {
        let (channel, probe) = try EmbeddedChannel.decoding()
        try channel.feed(SampleStreams.clientSessionBytes, chunkSizes: [Int.max])
        let events = try channel.drainEvents()
        #expect(probe.errors.isEmpty)
        #expect(try channel.finish().isClean)
        return events
    }

    @Test func wholeStreamGivesTheExpectedEvents() throws {
        let events = try Self.referenceEvents()
        try #require(events.count == 7)

        let header = try #require(events[0].header)
        #expect(header.name == "stream" && header.prefix == "stream")
        #expect(header.defaultNamespace == XMLNamespace.client)
        #expect(header[attribute: "to"] == "example.com")
        #expect(header.attributes.contains(XMLAttribute("lang", "en", namespace: XMLNamespace.xml)))

        let names = events.dropFirst().dropLast().map { $0.element?.name }
        #expect(names == ["auth", "iq", "message", "presence", "iq"])
        #expect(events[1].element?.namespace == XMLNamespace.sasl)
        #expect(events[1].element?.text == "AGp1bGlldAByMG0zMG15cjBtMzA=")
        #expect(events[2].element?.firstChild("bind", namespace: XMLNamespace.bind)?.firstChild("resource")?.text == "balcony")
        #expect(events[3].element == SampleStreams.expectedMessage)
        let status = events[4].element?.firstChild("status")
        #expect(status?.text == "Dehors & à côté")
        #expect(status?.attribute("lang", namespace: XMLNamespace.xml) == "fr")
        #expect(events[5].element?.firstChild("ping", namespace: "urn:xmpp:ping") != nil)
        #expect(events[6] == .streamClosed)
    }

    @Test(arguments: [1, 2, 3, 7, 42, 0xDEAD_BEEF, 0x5EED_F00D] as [UInt64])
    func randomChunkingGivesTheSameEvents(seed: UInt64) throws {
        let reference = try Self.referenceEvents()
        let (channel, probe) = try EmbeddedChannel.decoding()
        try channel.feed(SampleStreams.clientSessionBytes, chunkSizes: randomChunkSizes(seed: seed))
        #expect(try channel.drainEvents() == reference, "seed \(seed)")
        #expect(probe.errors.isEmpty)
        #expect(try channel.finish().isClean)
    }

    @Test func oneBytePerReadGivesTheSameEvents() throws {
        let reference = try Self.referenceEvents()
        let (channel, probe) = try EmbeddedChannel.decoding()
        var events: [XMLStreamEvent] = []
        var reads = 0
        for byte in SampleStreams.clientSessionBytes {
            try channel.writeInbound(ByteBuffer(bytes: [byte]))
            reads += 1
            // Each event is delivered during the read that completed it, not later.
            events += try channel.drainEvents()
        }
        #expect(reads == SampleStreams.clientSessionBytes.count)
        #expect(events == reference)
        #expect(probe.errors.isEmpty)
        #expect(try channel.finish().isClean)
    }

    /// An element is reported on the read that brings its last `>`, and not before.
    @Test func eventArrivesWithTheLastByteOfItsElement() throws {
        let (channel, _) = try EmbeddedChannel.decoding()
        try channel.feed(SampleStreams.clientHeader)
        #expect(try channel.drainEvents().count == 1)
        let presence = Array("<presence><show>chat</show></presence>".utf8)
        try channel.feed(Array(presence.dropLast()), chunkSizes: [1000])
        #expect(try channel.drainEvents().isEmpty)
        try channel.writeInbound(ByteBuffer(bytes: [presence.last!]))
        #expect(try channel.drainEvents().map(\.element?.name) == ["presence"])
    }

    /// An empty read (a socket can deliver one) changes nothing.
    @Test func emptyReadsAreHarmless() throws {
        let (channel, probe) = try EmbeddedChannel.decoding()
        try channel.writeInbound(ByteBuffer())
        try channel.feed(SampleStreams.clientHeader)
        try channel.writeInbound(ByteBuffer())
        try channel.feed("<presence/>")
        #expect(try channel.drainEvents().count == 2)
        #expect(probe.errors.isEmpty)
    }
}
