import Foundation
import NIOCore
import ParleyCore
import ParleyStream
import ParleyTLS

/// Certificates generated once per test run (no keys in git).
enum StreamTestCertificates {
    static let domain = "example.test"
    static let server: SelfSignedCertificate = try! SelfSignedCertificate.generate(domain: domain)

    static func serverContext() throws -> TLSContext {
        try TLSContext(
            server: TLSServerConfiguration(
                certificateChain: .pem(server.certificatePEM), privateKey: .pem(server.privateKeyPEM)))
    }

    static func clientContext() throws -> TLSContext {
        try TLSContext(client: TLSClientConfiguration(trust: .roots([.pem(server.certificatePEM)])))
    }
}

enum StartTLSElements {
    static let starttls = XMLElement("starttls", namespace: XMLNamespace.tls)
    static let proceed = XMLElement("proceed", namespace: XMLNamespace.tls)

    static func features(offeringTLS: Bool) -> XMLElement {
        var features = XMLElement("features", namespace: XMLNamespace.streams)
        if offeringTLS {
            features.append(XMLElement("starttls", namespace: XMLNamespace.tls, [:], [XMLElement("required")]))
        } else {
            features.append(XMLElement("bind", namespace: XMLNamespace.bind))
        }
        return features
    }
}

/// The server half of RFC 6120 §5.4, reduced to its stream mechanics: answers each header,
/// offers STARTTLS once, and on `<starttls/>` writes `<proceed/>`, then inserts TLS at
/// `.first`, then restarts the decoder. Every event it sees is recorded.
final class ServerStartTLS: ChannelInboundHandler {
    typealias InboundIn = XMLStreamEvent
    typealias OutboundOut = XMLStreamOutput

    private let tlsContext: TLSContext
    /// Fulfilled with the first stanza (iq/message/presence) received over TLS.
    private var stanzaOverTLS: EventLoopPromise<XMLElement>?
    private(set) var secured = false
    private var streams = 0
    var events: [XMLStreamEvent] = []
    var errors: [any Error] = []
    var tlsEvents: [TLSEvent] = []

    init(tlsContext: TLSContext, stanzaOverTLS: EventLoopPromise<XMLElement>? = nil) {
        self.tlsContext = tlsContext
        self.stanzaOverTLS = stanzaOverTLS
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let event = unwrapInboundIn(data)
        events.append(event)
        switch event {
        case .streamOpened:
            streams += 1
            context.write(wrapOutboundOut(.open(StreamOpening(from: StreamTestCertificates.domain, id: "s\(streams)"))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.element(StartTLSElements.features(offeringTLS: !secured))), promise: nil)
        case .stanza(let element) where element.name == "starttls" && element.namespace == XMLNamespace.tls:
            guard !secured else { return }
            context.writeAndFlush(wrapOutboundOut(.element(StartTLSElements.proceed)), promise: nil)
            do {
                try context.pipeline.syncOperations.addHandler(TLSHandler(context: tlsContext), position: .first)
            } catch {
                context.fireErrorCaught(error)
                return
            }
            secured = true
            context.triggerUserOutboundEvent(XMLStreamDecoder.Restart.afterTLS, promise: nil)
        case .stanza(let element):
            if secured, element.isStanza { settle(.success(element)) }
        case .streamClosed:
            context.writeAndFlush(wrapOutboundOut(.close), promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSEvent { tlsEvents.append(event) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        errors.append(error)
        settle(.failure(error))
    }

    func channelInactive(context: ChannelHandlerContext) {
        settle(.failure(ChannelError.eof))
        context.fireChannelInactive()
    }

    private func settle(_ result: Result<XMLElement, any Error>) {
        let promise = stanzaOverTLS
        stanzaOverTLS = nil
        promise?.completeWith(result)
    }
}

/// The client half: opens the stream when the connection is up, asks for STARTTLS when
/// offered, upgrades on `<proceed/>` and opens the new stream at once; once the stream over
/// TLS has its features it sends `stanzas`.
final class ClientStartTLS: ChannelInboundHandler {
    typealias InboundIn = XMLStreamEvent
    typealias OutboundOut = XMLStreamOutput

    private let tlsContext: TLSContext
    private let stanzas: [XMLElement]
    private(set) var secured = false
    var events: [XMLStreamEvent] = []
    var errors: [any Error] = []
    var tlsEvents: [TLSEvent] = []

    init(tlsContext: TLSContext, stanzas: [XMLElement]) {
        self.tlsContext = tlsContext
        self.stanzas = stanzas
    }

    private func openStream(context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(.open(StreamOpening(to: StreamTestCertificates.domain))), promise: nil)
    }

    func channelActive(context: ChannelHandlerContext) {
        openStream(context: context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let event = unwrapInboundIn(data)
        events.append(event)
        guard case .stanza(let element) = event else { return }
        if element.name == "features", element.namespace == XMLNamespace.streams {
            if !secured, element.firstChild("starttls", namespace: XMLNamespace.tls) != nil {
                context.writeAndFlush(wrapOutboundOut(.element(StartTLSElements.starttls)), promise: nil)
            } else if secured {
                for stanza in stanzas { context.write(wrapOutboundOut(.element(stanza)), promise: nil) }
                context.flush()
            }
        } else if element.name == "proceed", element.namespace == XMLNamespace.tls, !secured {
            do {
                try context.pipeline.syncOperations.addHandler(
                    TLSHandler(context: tlsContext, serverName: StreamTestCertificates.domain), position: .first)
            } catch {
                context.fireErrorCaught(error)
                return
            }
            secured = true
            context.triggerUserOutboundEvent(XMLStreamDecoder.Restart.afterTLS, promise: nil)
            // Held by the TLS handler until the handshake completes.
            openStream(context: context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSEvent { tlsEvents.append(event) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        errors.append(error)
    }
}

extension ChannelPipeline.SynchronousOperations {
    /// decoder → encoder → `negotiator`: the XML stream layer the tests put on each side.
    func addStreamHandlers(_ negotiator: some ChannelHandler) throws {
        try addHandler(XMLStreamDecoder())
        try addHandler(XMLStreamEncoder())
        try addHandler(negotiator)
    }
}
