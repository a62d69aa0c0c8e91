import NIOCore
import NIOPosix
import ParleyCore
import ParleyStream
import ParleyTLS
import Testing

/// The same upgrade over a real TCP connection on 127.0.0.1, with NIOPosix's event loops.
@Suite struct LoopbackStartTLSTests {
    @Test func stanzaArrivesParsedAfterStartTLSOverRealSockets() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let serverContext = try StreamTestCertificates.serverContext()
        let clientContext = try StreamTestCertificates.clientContext()
        let received = group.next().makePromise(of: XMLElement.self)
        let stanza = StartTLSStreamTests.secret

        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addStreamHandlers(
                        ServerStartTLS(tlsContext: serverContext, stanzaOverTLS: received))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(server.localAddress?.port)

        let client = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addStreamHandlers(
                        ClientStartTLS(tlsContext: clientContext, stanzas: [stanza]))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()

        // Bounded, so a broken upgrade fails the test instead of hanging it.
        let timeout = group.next().scheduleTask(in: .seconds(10)) {
            received.fail(ChannelError.connectTimeout(.seconds(10)))
        }
        let result: Result<XMLElement, any Error>
        do {
            result = .success(try await received.futureResult.get())
        } catch {
            result = .failure(error)
        }
        timeout.cancel()

        let secured = try await client.eventLoop.submit {
            try client.pipeline.syncOperations.handler(type: ClientStartTLS.self).secured
        }.get()
        try? await client.close()
        try? await server.close()
        try await group.shutdownGracefully()

        #expect(try result.get() == stanza)
        #expect(secured)
    }
}
