import Foundation
import ParleyCore
import ParleyServer
import ParleyTestSupport
import Testing

/// XEP-0124 §14 and §12 over real HTTP: requests taken in rid order whatever order they
/// arrive in, a lost answer given again, the window, acknowledgements, and overactivity.
@Suite struct BOSHRequestIDScenarios {
    static func message(_ id: String) -> String {
        "<message to='bob@localhost/home' type='chat' id='\(id)'><body>\(id)</body></message>"
    }

    @Test func requestsArrivingOutOfOrderAreProcessedInRIDOrder() async throws {
        try await BOSHScenarios.with { server, port in
            let bob = try await server.login("bob", resource: "home")
            let web = BOSHTestClient(port: port)
            try await web.login("alice", resource: "web")
            try await web.settle()
            let first = web.takeRID(), second = web.takeRID()
            // The later request overtakes the earlier one (another HTTP connection was faster).
            let late = Task { try await web.request(Self.message("second"), rid: second) }
            try await Task.sleep(for: .milliseconds(300))
            try await bob.expectNothingPending("a request was processed before the one before it came")
            let early = Task { try await web.request(Self.message("first"), rid: first) }
            let messages = [try await bob.expect("message"), try await bob.expect("message")]
            #expect(messages.map { $0.firstChild("body")?.text } == ["first", "second"])
            _ = try await (early.value, late.value)
        }
    }

    @Test func aRepeatedRIDGetsTheSameAnswerAndItsStanzasAreNotProcessedTwice() async throws {
        try await BOSHScenarios.with { server, port in
            let bob = try await server.login("bob", resource: "home")
            let web = BOSHTestClient(port: port)
            try await web.login("alice", resource: "web")
            try await web.settle()
            let rid = web.takeRID()
            let payload = "<message to='bob@localhost/home' type='chat' id='once'><body>once</body></message>"
                + "<iq type='get' id='p1' to='localhost'><ping xmlns='urn:xmpp:ping'/></iq>"
            let answer = try await web.request(payload, rid: rid)
            #expect(answer.payload.first?[attribute: "id"] == "p1", "\(answer.text)")
            _ = try await bob.expect("message")
            // The answer was lost on the way (a dropped poll): the client sends the same request.
            let again = try await BOSHTestClient.post(port: port, web.body(payload, rid: rid))
            #expect(again.text == answer.text)
            try await bob.expectNothingPending("the repeated request's message was delivered again")
            // The session goes on.
            let pong = try await web.request("<iq type='get' id='p2' to='localhost'><ping xmlns='urn:xmpp:ping'/></iq>")
            #expect(pong.payload.first?[attribute: "id"] == "p2", "\(pong.text)")
            // A rid answered longer ago than the window is gone: the session ends.
            let old = try await BOSHTestClient.post(port: port, web.body(rid: rid - 5))
            #expect(old.isTerminate && old.condition == "item-not-found", "\(old.text)")
        }
    }

    @Test func aHeldRequestRepeatedIsHeldAgainOnTheNewConnection() async throws {
        try await BOSHScenarios.with { server, port in
            let bob = try await server.login("bob", resource: "home")
            let web = BOSHTestClient(port: port, wait: 30)
            try await web.login("alice", resource: "web")
            try await web.settle()
            let rid = web.takeRID()
            let lost = Task { try await web.request(rid: rid) }
            try await Task.sleep(for: .milliseconds(200))
            let retry = Task { try await BOSHTestClient.post(port: port, web.body(rid: rid)) }
            // The first copy is let go at once, empty; the retry carries what comes.
            let released = try await lost.value
            #expect(released.payload.isEmpty && !released.isTerminate, "\(released.text)")
            try await bob.send("<message to='alice@localhost/web' type='chat' id='m'><body>to the retry</body></message>")
            let answer = try await retry.value
            #expect(answer.payload.first?.firstChild("body")?.text == "to the retry", "\(answer.text)")
        }
    }

    @Test func aRIDBeyondTheWindowEndsTheSessionWithItemNotFound() async throws {
        try await BOSHScenarios.with { server, port in
            let web = BOSHTestClient(port: port)
            try await web.login("alice", resource: "web")
            try await web.settle()
            let answer = try await web.request(rid: web.nextRID + 2)
            #expect(answer.isTerminate && answer.condition == "item-not-found", "\(answer.text)")
            try SchemaValidator.shared.validate(answer.text)
            try await server.waitUntilOffline("alice")
            let unknown = try await BOSHTestClient.post(
                port: port, "<body xmlns='http://jabber.org/protocol/httpbind' rid='5' sid='no-such-session'/>")
            #expect(unknown.status == 200 && unknown.isTerminate && unknown.condition == "item-not-found", "\(unknown.text)")
        }
    }

    @Test func moreSimultaneousRequestsThanAllowedIsAPolicyViolation() async throws {
        try await BOSHScenarios.with { server, port in
            let web = BOSHTestClient(port: port, wait: 30)
            try await web.login("alice", resource: "web")
            try await web.settle()
            // requests='2': one held poll, one early request waiting for the rid between, and
            // that rid makes three at once.
            // The pauses let each request reach the server before the next, on a loaded machine too.
            let held = Task { try await web.request() }
            try await Task.sleep(for: .seconds(1))
            let between = web.takeRID()
            let parked = Task { try await web.request(rid: web.takeRID()) }
            try await Task.sleep(for: .seconds(1))
            let third = try await web.request(rid: between)
            #expect(third.isTerminate && third.condition == "policy-violation", "\(third.text)")
            #expect(try await held.value.isTerminate)
            #expect(try await parked.value.isTerminate)
            try await server.waitUntilOffline("alice")
        }
    }

    @Test func pollingFasterThanAllowedWithHoldZeroIsAPolicyViolation() async throws {
        try await BOSHScenarios.with { _, port in
            let client = BOSHTestClient(port: port)
            let created = try await client.create(wait: 10, hold: 0)
            #expect(created.body?[attribute: "hold"] == "0" && created.body?[attribute: "requests"] == "1", "\(created.text)")
            let first = try await client.request()
            #expect(!first.isTerminate && first.payload.isEmpty, "\(first.text)")
            let second = try await client.request()
            #expect(second.isTerminate && second.condition == "policy-violation", "\(second.text)")
        }
    }

    @Test func acknowledgementsReportTheNewestRIDOnOlderAnswers() async throws {
        try await BOSHScenarios.with { server, port in
            let bob = try await server.login("bob", resource: "home")
            let web = BOSHTestClient(port: port, wait: 30)
            let created = try await web.create(extra: "ack='1'")
            #expect(created.body?[attribute: "ack"] == "\(web.nextRID - 1)")
            let held = Task { try await web.request(attributes: "ack='\(web.nextRID - 1)'") }
            try await Task.sleep(for: .milliseconds(200))
            // A second request pushes the held one out (hold='1'): its answer says which is newest.
            let newest = web.nextRID
            let pushing = Task { try await web.request() }
            let older = try await held.value
            #expect(older.body?[attribute: "ack"] == "\(newest)", "\(older.text)")
            try SchemaValidator.shared.validate(older.text)
            // The held one goes with the session's end.
            #expect(try await web.request(attributes: "type='terminate'").isTerminate)
            #expect(try await pushing.value.isTerminate)
            _ = bob
        }
    }

    @Test func anAckShowingALostAnswerGetsAReportAtOnce() async throws {
        try await BOSHScenarios.with { _, port in
            let web = BOSHTestClient(port: port, wait: 30)
            let creationRID = web.nextRID
            _ = try await web.create(extra: "ack='1'")
            // An answer the client then loses: a refused login comes back at once.
            let lostRID = web.nextRID
            let wrong = Data("\u{0}alice\u{0}wrong".utf8).base64EncodedString()
            let lost = try await web.request("<auth xmlns='\(XMLNamespace.sasl)' mechanism='PLAIN'>\(wrong)</auth>")
            #expect(lost.payload.first?.name == "failure", "\(lost.text)")
            try await Task.sleep(for: .milliseconds(1300))
            // §9.3: its next request acknowledges only the creation. Instead of being held (wait
            // 30 s), it is answered at once, naming the answer missing and its age in ms.
            let started = ContinuousClock.now
            let reported = try await web.request(attributes: "ack='\(creationRID)'")
            #expect(ContinuousClock.now - started < .seconds(10))
            #expect(reported.body?[attribute: "report"] == "\(lostRID)", "\(reported.text)")
            let time = try #require(reported.body?[attribute: "time"].flatMap { Int($0) }, "\(reported.text)")
            #expect(time >= 1300 && time < 30_000, "\(reported.text)")
            try SchemaValidator.shared.validate(reported.text)
            // The client asks again for the answer it lacks, and gets it as it was.
            #expect(try await web.request(rid: lostRID).text == lost.text)
        }
    }

    @Test func aPauseAnswersEveryHeldRequestAndStretchesInactivity() async throws {
        // An inactivity of 3 s: short enough to wait past, long enough that a loaded machine's
        // gaps between the login's requests do not end the session first.
        try await BOSHScenarios.with({ $0.http.bosh.inactivity = .seconds(3) }) { server, port in
            let web = BOSHTestClient(port: port)
            try await web.login("alice", resource: "web")
            try await web.settle()
            let held = Task { try await web.request() }
            try await Task.sleep(for: .milliseconds(500))
            let paused = try await web.request(attributes: "pause='10'")
            #expect(!paused.isTerminate, "\(paused.text)")
            #expect(try await held.value.isTerminate == false)
            // Past the usual inactivity (3 s), within the pause (10 s): still there.
            try await Task.sleep(for: .milliseconds(4500))
            #expect(server.running.context.sessions.sessions(of: try JID("alice@localhost")).count == 1)
            let pong = try await web.request("<iq type='get' id='p' to='localhost'><ping xmlns='urn:xmpp:ping'/></iq>")
            #expect(pong.payload.first?[attribute: "type"] == "result", "\(pong.text)")
            let tooLong = try await web.request(attributes: "pause='1000'")
            #expect(tooLong.isTerminate && tooLong.condition == "policy-violation", "\(tooLong.text)")
        }
    }
}
