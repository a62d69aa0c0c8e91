import NIOCore
import ParleyCore

/// Serializes `XMLStreamOutput` into bytes, keeping track of the namespace context of the
/// stream it opened so stanzas carry no redundant declarations.
public final class XMLStreamEncoder: ChannelOutboundHandler, RemovableChannelHandler {
    public typealias OutboundIn = XMLStreamOutput
    public typealias OutboundOut = ByteBuffer

    private var context = XMLNamespaceContext.clientStream
    /// Whether we have an open stream of our own to close; an error before any header (the
    /// peer's header was unacceptable) must still open one first (RFC 6120 §4.9.1.1).
    private var streamOpen = false
    /// The header to send if an error must be written before any stream was opened.
    private let fallbackOpening: StreamOpening

    public init(fallbackOpening: StreamOpening = StreamOpening()) {
        self.fallbackOpening = fallbackOpening
    }

    public func write(context channelContext: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let output = unwrapOutboundIn(data)
        var capacity = 512
        if case .element(let element) = output { capacity = max(capacity, element.serializedSizeEstimate + 64) }
        var buffer = channelContext.channel.allocator.buffer(capacity: capacity)
        switch output {
        case .open(let opening):
            opening.write(to: &buffer)
            context = opening.namespaceContext
            streamOpen = true
        case .element(let element):
            XMLSerializer.write(element, to: &buffer, context: context)
        case .whitespace:
            buffer.writeStaticString(" ")
        case .error(let error):
            if !streamOpen {
                fallbackOpening.write(to: &buffer)
                context = fallbackOpening.namespaceContext
            }
            XMLSerializer.write(error.element, to: &buffer, context: context)
            buffer.writeStaticString("</stream:stream>")
            streamOpen = false
        case .close:
            buffer.writeStaticString("</stream:stream>")
            streamOpen = false
        }
        channelContext.write(wrapOutboundOut(buffer), promise: promise)
    }
}
