import NIOCore
import ParleyCore
import ParleyStream

/// The session's way out: writes (straight to the encoder when the listener gave it one),
/// one flush per event-loop tick however many deliveries arrive in it, and the bound on what
/// a client that stops reading can make the server hold.
extension C2SSessionHandler {
    func write(_ output: XMLStreamOutput) {
        if let encoder, encoder.enqueue(output) { return }
        context?.write(wrapOutboundOut(output), promise: nil)
    }

    /// Hands what was written to the socket; through the encoder straight when there is one.
    func flushOutput() {
        if let encoder, encoder.flushEnqueued() { return }
        context?.flush()
    }

    func send(_ element: XMLElement) {
        server.metrics.stanzaOut(element.name)
        write(.element(element))
    }

    /// Writes and flushes once per event-loop tick, however many deliveries arrive in it
    /// (the flush then checks for a slow consumer: the bytes reach the channel only there).
    func sendSoon(_ element: XMLElement) {
        send(element)
        scheduleFlush()
    }

    /// The flush that `sendSoon` scheduled or deferred.
    private func flushSoon() {
        flushOutput()
        if let channel = context?.channel, !channel.isWritable { checkSlowConsumer(channel) }
    }

    /// A client that stops reading would make the server hold everything sent to it; past
    /// a bound, the stream ends instead (its unacknowledged messages are handed on).
    private func checkSlowConsumer(_ channel: any Channel) {
        let buffered = (try? channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
        if buffered > Self.maxBufferedOutput {
            fail(StreamError(.resourceConstraint, text: "Too much data is waiting for you to read it."))
        }
    }

    static let maxBufferedOutput = 16 << 20

    func scheduleFlush() {
        if flushDeferred {
            flushOwed = true
            return
        }
        guard !flushScheduled, let context else { return }
        flushScheduled = true
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let handler = loopBound.value
            handler.flushScheduled = false
            handler.flushSoon()
        }
    }

    /// The end of a `DeliveryBatch`'s writes to this session.
    func flushDeferredWrites() {
        flushDeferred = false
        guard flushOwed else { return }
        flushOwed = false
        flushSoon()
    }
}
