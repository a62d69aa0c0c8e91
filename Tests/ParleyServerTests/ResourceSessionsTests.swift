import NIOCore
import NIOEmbedded
import ParleyCore
import Testing

@testable import ParleyServer

/// An account's sessions by resource: a lone session is kept as it is, more in a
/// dictionary, and both behave as the dictionary the registry used before.
@Suite struct ResourceSessionsTests {
    private static func session(_ jid: String, on loop: EmbeddedEventLoop) throws -> SessionHandle {
        SessionHandle(
            jid: try JID(jid), id: UInt64.random(in: 1 ... .max), remoteAddress: "test", eventLoop: loop,
            closeFuture: loop.makeSucceededFuture(())
        ) { _ in }
    }

    @Test func behavesAsADictionaryByResource() throws {
        let loop = EmbeddedEventLoop()
        let phone = try Self.session("alice@localhost/phone", on: loop)
        let laptop = try Self.session("alice@localhost/laptop", on: loop)
        let newPhone = try Self.session("alice@localhost/phone", on: loop)
        var sessions = ResourceSessions()
        #expect(sessions.isEmpty && sessions.count == 0 && sessions.values.isEmpty)
        sessions["phone"] = phone
        #expect(sessions["phone"] == phone && sessions["laptop"] == nil && sessions.count == 1)
        sessions["laptop"] = laptop
        #expect(sessions["phone"] == phone && sessions["laptop"] == laptop && sessions.count == 2)
        #expect(Set(sessions.values) == [phone, laptop])
        sessions["phone"] = newPhone
        #expect(sessions["phone"] == newPhone && sessions.count == 2)
        sessions["laptop"] = nil
        #expect(sessions.values == [newPhone] && sessions["laptop"] == nil)
        // Removing what is not there changes nothing.
        sessions["tablet"] = nil
        #expect(sessions.values == [newPhone])
        sessions["phone"] = nil
        #expect(sessions.isEmpty && sessions["phone"] == nil)
    }

    /// A session stored under a key other than its own resource is still found by that key.
    @Test func aSessionUnderAnotherKeyIsFoundByIt() throws {
        let loop = EmbeddedEventLoop()
        let phone = try Self.session("alice@localhost/phone", on: loop)
        var sessions = ResourceSessions()
        sessions["other"] = phone
        #expect(sessions["other"] == phone && sessions["phone"] == nil && sessions.count == 1)
        sessions["other"] = nil
        #expect(sessions.isEmpty)
    }
}
