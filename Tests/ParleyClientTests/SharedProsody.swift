import Foundation
import ParleyClient
import ParleyCore
import ParleyTestSupport
import Testing

/// One Prosody for the whole suite (starting one costs a second or two), with the modules
/// the profile features need; each test uses accounts of its own, so tests may run together.
struct SharedProsody: SuiteTrait, TestScoping {
    @TaskLocal static var current: ProsodyServer?
    /// Its XMPP-over-WebSocket endpoint (mod_websocket, RFC 7395), plain `ws://` on loopback.
    @TaskLocal static var webSocketURL: String?

    static let users = [
        "alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "kim", "cli", "clifriend", "lena", "mike",
        "nora", "oscar", "pat", "quinn", "olivia", "peggy", "legacy@legacy.localhost",
    ]
    static func password(_ user: String) -> String { "\(user)'s password" }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // XEP-0363 (mod_http_file_share) at upload.localhost, over plain HTTP on loopback;
        // its URLs name localhost, which the clients can resolve.
        let httpPort = try LoopbackPort.unusedBelowEphemeralRange()
        let prosody = try await ProsodyServer.start(
            users: Dictionary(uniqueKeysWithValues: Self.users.map { ($0, Self.password($0)) }),
            modules: ["pep", "vcard_legacy", "private", "bookmarks", "lastactivity", "csi_simple", "websocket"],
            // A host without XEP-0402, where bookmarks live in private XML storage (XEP-0048).
            extraHosts: ["legacy.localhost": ["bookmarks", "pep", "vcard_legacy"]],
            // mod_csi_simple goes back to holding stanzas this soon after a flush (default 5 s).
            options: """
                csi_resume_inactive_delay = 0.2
                -- mod_websocket over plain HTTP on loopback: secure enough for c2s_require_encryption,
                -- and open to clients that send no browser Origin.
                consider_websocket_secure = true
                cross_domain_websocket = true
                """,
            components: """
                Component "conference.localhost" "muc"
                    modules_enabled = { "muc_mam" }

                Component "upload.localhost" "http_file_share"
                    http_host = "localhost"
                    http_file_share_size_limit = 1000000

                """,
            httpPort: httpPort)
        do {
            try await Self.$current.withValue(prosody) {
                try await Self.$webSocketURL.withValue("ws://127.0.0.1:\(httpPort)/xmpp-websocket") { try await function() }
            }
        } catch {
            print("--- Prosody log (\(prosody.logPath)), last lines ---\n\(prosody.logTail(lines: 80))")
            await prosody.stop()
            throw error
        }
        await prosody.stop()
    }

    static var prosody: ProsodyServer {
        get throws {
            guard let current else { throw TimedOut(description: "no shared Prosody (the suite needs the .sharedProsody trait)") }
            return current
        }
    }

    /// A client for `user` with a cache (a fresh one unless `cache` names one).
    static func client(_ user: String, resource: String? = nil, cache: String? = nil) throws -> (ChatClient, EventRecorder) {
        let prosody = try prosody
        var configuration = try prosody.configuration(for: user, password: password(user))
        configuration.resource = resource
        let client = try ChatClient(
            configuration: configuration, cachePath: cache ?? prosody.directory + "/clients/\(user)-\(UUID().uuidString).sqlite",
            logger: quietLogger("client.\(user)"))
        return (client, EventRecorder(client.events))
    }
}

extension Trait where Self == SharedProsody {
    static var sharedProsody: Self { SharedProsody() }
}

/// `a` asks `b` to be friends and `b` accepts: both see each other's presence.
func makeFriends(_ a: ChatClient, _ aJID: JID, _ aEvents: EventRecorder, _ b: ChatClient, _ bJID: JID, _ bEvents: EventRecorder) async throws {
    try await a.addContact(bJID)
    try await bEvents.next("\(aJID)'s request") { if case .contactRequest(let from, _) = $0 { from == aJID } else { false } }
    await b.accept(aJID)
    try await eventually("\(aJID) and \(bJID) are friends") {
        let one = await a.contacts().first { $0.jid == bJID }?.subscription
        let two = await b.contacts().first { $0.jid == aJID }?.subscription
        return one == .both && two == .both
    }
}

func jid(_ user: String) -> JID {
    try! JID(user.contains("@") ? user : "\(user)@localhost")
}

/// A PNG header with a size and random bytes after it, so every test's picture has its own hash.
func samplePNG(width: UInt32, height: UInt32, extra: Int = 600) -> [UInt8] {
    var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
    for value in [width, height] { bytes += withUnsafeBytes(of: value.bigEndian, Array.init) }
    return bytes + [8, 6, 0, 0, 0] + (0..<extra).map { _ in UInt8.random(in: 0...255) }
}
