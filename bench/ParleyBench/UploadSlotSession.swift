import NIOCore
import ParleyCore

/// The XMPP half of the upload benchmark: one logged-in session that asks the server's
/// XEP-0363 service for slots (`<request xmlns='urn:xmpp:http:upload:0'/>`, §4). Confined to
/// its channel's event loop: every method must run there.
final class UploadSlotSession: @unchecked Sendable {
    static let namespace = "urn:xmpp:http:upload:0"

    /// What §4 hands back: where to PUT (with the headers to send), where to GET.
    struct Slot: Sendable {
        var put: String
        var headers: [(name: String, value: String)]
        var get: String
    }

    /// The window phase's outcome.
    struct WindowStats: Sendable {
        var answered = 0
        var errors = 0
        var firstError: String?
        var latencies: [Int64] = []
        var lastAnswer = NIODeadline.now()
        var inFlight = 0
    }

    let loop: any EventLoop
    let service: String
    var context: ChannelHandlerContext?
    var stats = WindowStats()
    private var pending: [Int: (sent: NIODeadline, promise: EventLoopPromise<Slot>?)] = [:]
    private var nextID = 0
    private var windowEnd: NIODeadline?
    private var windowSize: Int64 = 1024

    init(loop: any EventLoop, service: String) {
        self.loop = loop
        self.service = service
    }

    /// One slot, for a caller that waits for it (the transfer phases).
    func request(filename: String, size: Int64, contentType: String) -> EventLoopFuture<Slot> {
        let promise = loop.makePromise(of: Slot.self)
        send(filename: filename, size: size, contentType: contentType, promise: promise)
        return promise.futureResult
    }

    /// Keeps `window` slot requests for `size` bytes unanswered until `end`: each answer sends
    /// the next request.
    func startWindow(_ window: Int, size: Int64, until end: NIODeadline) {
        stats = WindowStats()
        windowEnd = end
        windowSize = size
        for _ in 0..<window { sendWindowed() }
    }

    private func sendWindowed() {
        send(filename: "rate-\(nextID).bin", size: windowSize, contentType: "application/octet-stream", promise: nil)
        stats.inFlight += 1
    }

    private func send(filename: String, size: Int64, contentType: String, promise: EventLoopPromise<Slot>?) {
        guard let context else {
            promise?.fail(BenchFailure("the XMPP session is gone"))
            return
        }
        let id = nextID
        nextID += 1
        pending[id] = (NIODeadline.now(), promise)
        let text =
            "<iq type='get' id='u\(id)' to='\(escaped(service))'><request xmlns='\(Self.namespace)' "
            + "filename='\(escaped(filename))' size='\(size)' content-type='\(escaped(contentType))'/></iq>"
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(string: text)), promise: nil)
    }

    func received(_ stanza: XMLElement, context: ChannelHandlerContext) {
        guard stanza.name == "iq", let id = stanza.id, id.hasPrefix("u"), let number = Int(id.dropFirst()),
            stanza.type == "result" || stanza.type == "error", let request = pending.removeValue(forKey: number)
        else {
            if stanza.name == "iq" { _ = PEPStanzas.answerIQ(stanza, caps: nil, context: context) }
            return
        }
        let now = NIODeadline.now()
        let slot = stanza.type == "result" ? Self.slot(stanza) : nil
        if let promise = request.promise {
            if let slot {
                promise.succeed(slot)
            } else {
                promise.fail(BenchFailure("slot refused: \(PEPStanzas.errorDescription(stanza))"))
            }
            return
        }
        stats.inFlight -= 1
        stats.lastAnswer = now
        if slot != nil {
            stats.answered += 1
            stats.latencies.append((now - request.sent).nanoseconds)
        } else {
            stats.errors += 1
            if stats.firstError == nil {
                stats.firstError = stanza.type == "error" ? PEPStanzas.errorDescription(stanza) : "a result without a usable <slot/>"
            }
            // A server that refuses once refuses the next one as fast: stop rather than spin.
            windowEnd = nil
        }
        if let end = windowEnd, now < end { sendWindowed() }
    }

    private static func slot(_ iq: XMLElement) -> Slot? {
        guard let slot = iq.firstChild("slot", namespace: namespace), let put = slot.firstChild("put", namespace: namespace),
            let putURL = put[attribute: "url"], let getURL = slot.firstChild("get", namespace: namespace)?[attribute: "url"]
        else { return nil }
        let headers = put.children("header", namespace: namespace).compactMap { header in
            header[attribute: "name"].map { (name: $0, value: header.text) }
        }
        return Slot(put: putURL, headers: headers, get: getURL)
    }
}

/// After the login handler: hands every stanza to the session.
final class UploadClientHandler: ChannelInboundHandler {
    typealias InboundIn = XMLStreamEvent

    private let session: UploadSlotSession

    init(session: UploadSlotSession) {
        self.session = session
    }

    func handlerAdded(context: ChannelHandlerContext) {
        session.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        session.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .stanza(let element) = unwrapInboundIn(data) else { return }
        session.received(element, context: context)
    }
}
