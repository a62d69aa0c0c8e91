import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import ParleyCore
import Testing

@testable import ParleyServer

/// Iq requests the server sends to a client: the answer is taken only from the full JID
/// asked, exactly once, and a request nobody answers ends by its timeout.
@Suite struct ServerIQRequestsTests {
    private static func session(_ jid: String, on loop: EmbeddedEventLoop, into sent: NIOLockedValueBox<[XMLElement]>) throws -> SessionHandle {
        SessionHandle(
            jid: try JID(jid), id: UInt64.random(in: 1 ... .max), remoteAddress: "test", eventLoop: loop,
            closeFuture: loop.makeSucceededFuture(())
        ) { delivery in
            if case .stanza(let stanza) = delivery { sent.withLockedValue { $0.append(stanza) } }
        }
    }

    @Test func onlyTheAskedResourceAnswersOnce() throws {
        let loop = EmbeddedEventLoop()
        let sent = NIOLockedValueBox([XMLElement]())
        let bob = try Self.session("bob@localhost/r", on: loop, into: sent)
        let requests = ServerIQRequests(domain: try JID("localhost"))
        let outcomes = NIOLockedValueBox([ServerIQRequests.Outcome]())
        requests.send(.get, XMLElement("query", namespace: XMLNamespace.discoInfo), to: bob) { outcome in
            outcomes.withLockedValue { $0.append(outcome) }
        }
        let iq = try #require(sent.withLockedValue { $0.first })
        #expect(iq.from == "localhost" && iq.to == "bob@localhost/r" && iq.type == "get")
        var reply = iq.iqResult()
        reply.from = "bob@localhost/other"
        #expect(!requests.receive(reply, from: try JID("bob@localhost/other")), "another resource cannot answer for it")
        #expect(requests.receive(reply, from: bob.jid))
        #expect(!requests.receive(reply, from: bob.jid), "answered once")
        #expect(requests.pendingCount == 0)
        let outcome = try #require(outcomes.withLockedValue { $0.first })
        guard case .answered(let answer) = outcome else { throw ScenarioFailure("expected the answer, got \(outcome)") }
        #expect(answer.id == iq.id)
        loop.advanceTime(by: .seconds(60))
        #expect(outcomes.withLockedValue { $0.count } == 1, "the timer was cancelled")
    }

    @Test func anUnansweredRequestTimesOut() throws {
        let loop = EmbeddedEventLoop()
        let sent = NIOLockedValueBox([XMLElement]())
        let bob = try Self.session("bob@localhost/r", on: loop, into: sent)
        let requests = ServerIQRequests(domain: try JID("localhost"))
        let outcomes = NIOLockedValueBox([String]())
        requests.send(.get, XMLElement("ping", namespace: XMLNamespace.ping), to: bob, timeout: .seconds(2)) { outcome in
            if case .timedOut = outcome { outcomes.withLockedValue { $0.append("timeout") } }
        }
        loop.advanceTime(by: .seconds(1))
        #expect(outcomes.withLockedValue { $0 }.isEmpty)
        loop.advanceTime(by: .seconds(2))
        #expect(outcomes.withLockedValue { $0 } == ["timeout"])
        #expect(requests.pendingCount == 0)
        let late = try #require(sent.withLockedValue { $0.first }).iqResult()
        #expect(!requests.receive(late, from: bob.jid), "too late")
    }
}
