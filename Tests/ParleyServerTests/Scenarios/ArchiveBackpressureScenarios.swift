import ParleyCore
@testable import ParleyServer
import Testing

/// Backpressure from the archive is per session (issue 17): a sender with
/// `ArchiveWriter.sessionWindow` messages waiting for their archive rows waits for its own
/// oldest one before reading on, and then continues as soon as it is committed. The database's
/// write lock stands in for a slow disk.
@Suite struct ArchiveBackpressureScenarios {
    @Test func aSenderWhoseWindowIsFullWaitsForItsOwnRowsThenGoesOn() async throws {
        try await TestServer.with { server in
            let bob = try await server.login("bob", resource: "home")
            let alice = try await server.login("alice", resource: "work")
            let window = ArchiveWriter.sessionWindow
            let total = window + 6
            let disk = await DatabaseWriteLock.hold(server.running.storage)
            for index in 1...total {
                try await alice.send("<message to='bob@localhost/home' type='chat' id='m\(index)'><body>\(index)</body></message>")
            }
            // The message that makes the window overflow is routed, then the stream holds.
            for index in 1...(window + 1) { #expect(try await bob.expect("message").id == "m\(index)") }
            try await bob.expectSilence(for: .milliseconds(300))
            await disk.release()
            for index in (window + 2)...total { #expect(try await bob.expect("message").id == "m\(index)") }
        }
    }
}
