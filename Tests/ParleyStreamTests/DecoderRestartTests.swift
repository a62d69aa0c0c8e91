import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyStream
import Testing

/// RFC 6120 §4.3.3: after STARTTLS and SASL a new stream begins on the same connection.
@Suite struct DecoderRestartTests {
    static let serverHeader =
        "<?xml version='1.0'?><stream:stream xmlns='jabber:client' "
        + "xmlns:stream='http://etherx.jabber.org/streams' from='example.com' id='s1' version='1.0'>"
    static let restartedServerHeader =
        "<?xml version='1.0'?><stream:stream xmlns='jabber:client' "
        + "xmlns:stream='http://etherx.jabber.org/streams' from='example.com' id='s2' version='1.0'>"
    static let success = "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>"
    static let bindFeatures =
        "<stream:features><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></stream:features>"

    /// What a client reads when the server answers SASL and restarts in one TCP segment.
    static let saslTail = success + restartedServerHeader + bindFeatures

    static func checkSASLRestart(_ events: [XMLStreamEvent]) {
        #expect(events.count == 4)
        guard events.count == 4 else { return }
        #expect(events[0].header?[attribute: "id"] == "s1")
        #expect(events[1].element?.name == "success")
        #expect(events[2].header?[attribute: "id"] == "s2")
        #expect(events[3].element?.firstChild("bind", namespace: XMLNamespace.bind) != nil)
    }

    @Test func afterSASLBytesInTheSameReadBelongToTheNewStream() throws {
        let (channel, probe) = try EmbeddedChannel.decoding(
            before: [RestartOnElement("success", restart: .afterSASL)])
        try channel.feed(Self.serverHeader + Self.saslTail)
        Self.checkSASLRestart(try channel.drainEvents())
        #expect(probe.errors.isEmpty)
    }

    /// The restart lands between two arbitrary reads, or in the middle of one.
    @Test(arguments: [1, 2, 3, 5, 8, 13, 99] as [UInt64])
    func afterSASLUnderAnyChunking(seed: UInt64) throws {
        let (channel, probe) = try EmbeddedChannel.decoding(
            before: [RestartOnElement("success", restart: .afterSASL)])
        let bytes = Array((Self.serverHeader + Self.saslTail).utf8)
        try channel.feed(bytes, chunkSizes: randomChunkSizes(seed: seed, in: 1...40))
        Self.checkSASLRestart(try channel.drainEvents())
        #expect(probe.errors.isEmpty, "seed \(seed)")
    }

    @Test func afterSASLOneBytePerRead() throws {
        let (channel, probe) = try EmbeddedChannel.decoding(
            before: [RestartOnElement("success", restart: .afterSASL)])
        try channel.feed(Array((Self.serverHeader + Self.saslTail).utf8), chunkSizes: repeatElement(1, count: .max))
        Self.checkSASLRestart(try channel.drainEvents())
        #expect(probe.errors.isEmpty)
    }

    /// Without the restart the second header is a protocol error: the test above is not vacuous.
    @Test func withoutRestartTheSecondHeaderIsRefused() throws {
        let (channel, probe) = try EmbeddedChannel.decoding()
        try channel.feed(Self.serverHeader + Self.saslTail)
        #expect(try channel.drainEvents().map(\.element?.name) == [nil, "success"])
        #expect(probe.streamErrors.count == 1)
    }

    /// Two restarts in one read: SASL success, then the element right after the new header.
    @Test func twoRestartsInOneRead() throws {
        let (channel, probe) = try EmbeddedChannel.decoding(
            before: [RestartOnElement("success", restart: .afterSASL)])
        let third = Self.restartedServerHeader.replacingOccurrences(of: "id='s2'", with: "id='s3'")
        try channel.feed(Self.serverHeader + Self.success + Self.restartedServerHeader + Self.success + third + "<presence/>")
        let events = try channel.drainEvents()
        #expect(events.compactMap { $0.header?[attribute: "id"] } == ["s1", "s2", "s3"])
        #expect(events.last?.element?.name == "presence")
        #expect(probe.errors.isEmpty)
    }

    static let auth = "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>AGp1bGlldABy</auth>"

    /// Whitespace between the old stream's last element and the new header (a newline after
    /// `</auth>`, a keepalive) is legal XMPP, though XML allows nothing before a declaration.
    @Test(arguments: [Int.max, 1, 3])
    func whitespaceBeforeTheRestartedHeaderIsSkipped(chunk: Int) throws {
        let (channel, probe) = try EmbeddedChannel.decoding(before: [RestartOnElement("auth", restart: .afterSASL)])
        try channel.feed(SampleStreams.clientHeader + Self.auth + "\n")
        try channel.feed(" \r\n\t")
        let restarted = SampleStreams.clientHeader + "<iq type='set' id='bind'/>"
        try channel.feed(Array(restarted.utf8), chunkSizes: repeatElement(chunk, count: .max))
        let events = try channel.drainEvents()
        #expect(probe.errors.isEmpty, "\(probe.errors)")
        #expect(events.map { $0.header != nil } == [true, false, true, false])
        #expect(events.last?.element?.id == "bind")
    }

    /// Only whitespace is skipped: anything else before the new header still fails the stream.
    @Test func textBeforeTheRestartedHeaderIsStillRefused() throws {
        let (channel, probe) = try EmbeddedChannel.decoding(before: [RestartOnElement("auth", restart: .afterSASL)])
        try channel.feed(SampleStreams.clientHeader + Self.auth + "\n x" + SampleStreams.clientHeader)
        #expect(try channel.drainEvents().count == 2)
        #expect(probe.streamErrors.count == 1)
    }

    /// Plaintext after `<starttls/>` may be an attacker's injection (CVE-2011-0411 style): it is
    /// dropped, and the next read starts the new stream.
    @Test func afterTLSDropsTheRestOfTheRead() throws {
        let (channel, probe) = try EmbeddedChannel.decoding(
            before: [RestartOnElement("starttls", restart: .afterTLS)])
        try channel.feed(
            SampleStreams.clientHeader + "<starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>"
                + "<iq type='set' id='evil'><query xmlns='jabber:iq:roster'/></iq><message>half")
        #expect(try channel.drainEvents().map(\.element?.name) == [nil, "starttls"])

        try channel.feed(SampleStreams.clientHeader + "<iq type='get' id='good'/>")
        let events = try channel.drainEvents()
        #expect(events.count == 2)
        #expect(events.first?.header?[attribute: "to"] == "example.com")
        #expect(events.last?.element?.id == "good")
        #expect(probe.errors.isEmpty)
    }

    /// `<starttls/>` as the last bytes of a read: nothing to drop, the next read is the new stream.
    @Test func afterTLSAtTheEndOfARead() throws {
        let (channel, probe) = try EmbeddedChannel.decoding(
            before: [RestartOnElement("proceed", restart: .afterTLS)])
        try channel.feed(Self.serverHeader + "<proceed xmlns='urn:ietf:params:xml:ns:xmpp-tls'/>")
        try channel.feed(Self.restartedServerHeader)
        let events = try channel.drainEvents()
        #expect(events.compactMap { $0.header?[attribute: "id"] } == ["s1", "s2"])
        #expect(probe.errors.isEmpty)
    }

    /// A restart asked for between reads resets the parser at once; the promise succeeds.
    @Test func restartOutsideAReadResetsImmediately() throws {
        for restart in [XMLStreamDecoder.Restart.afterSASL, .afterTLS] {
            let (channel, probe) = try EmbeddedChannel.decoding()
            try channel.feed(Self.serverHeader + Self.success)
            #expect(try channel.drainEvents().count == 2)

            let promise = channel.eventLoop.makePromise(of: Void.self)
            channel.pipeline.triggerUserOutboundEvent(restart, promise: promise)
            try promise.futureResult.wait()

            try channel.feed(Self.restartedServerHeader + Self.bindFeatures)
            let events = try channel.drainEvents()
            #expect(events.first?.header?[attribute: "id"] == "s2", "\(restart)")
            #expect(events.count == 2)
            #expect(probe.errors.isEmpty)
        }
    }

    /// Other outbound user events pass through the decoder untouched.
    @Test func otherOutboundEventsPassThrough() throws {
        let (channel, _) = try EmbeddedChannel.decoding()
        let promise = channel.eventLoop.makePromise(of: Void.self)
        channel.pipeline.triggerUserOutboundEvent("something else", promise: promise)
        // EmbeddedChannel's head fails any outbound event that reaches it: this one did.
        #expect(throws: ChannelError.operationUnsupported) { try promise.futureResult.wait() }
    }
}
