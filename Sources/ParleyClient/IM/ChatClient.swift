import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyCore

/// The instant-messaging client an application uses: contacts and friend requests (RFC 6121),
/// one-to-one chat with delivery receipts (XEP-0184), and a local cache of the roster and
/// conversations, on top of an `XMPPClient` that keeps the connection up.
///
/// Everything the server tells arrives on `events`, in order: connection changes from the
/// underlying client interleaved with the IM events this layer adds. After every (re)connect
/// it fetches the roster (only the changes, when the server and the cache allow it, XEP-0237)
/// and re-announces the status the user chose.
public actor ChatClient {
    /// The connection underneath, for anything this layer does not cover.
    public nonisolated let xmpp: XMPPClient
    /// nil when the client was made without a cache path.
    public nonisolated let cache: ChatCache?
    public nonisolated var events: AsyncStream<ClientEvent> { xmpp.events }

    let ownBareJID: JID
    let logger: Logger
    /// The roster as last received, by bare JID.
    var roster: [JID: Contact] = [:]
    var rosterVersion: String?
    /// Contacts we asked to see the presence of and who have not answered: their
    /// `unsubscribed` means "declined", not "removed". Roster pushes can clear `ask` before
    /// the answering presence arrives, so this is remembered separately.
    var outgoingRequests: Set<JID> = []
    /// Contacts whose removal was already reported (a removal arrives as both `unsubscribe`
    /// and `unsubscribed`).
    var removalReported: Set<JID> = []
    var status = Status()
    /// The catch-up with the archive that runs now or ran last (see `synchronize()`).
    var catchUp: Task<Void, any Error>?
    /// False once the server said it keeps no archive for us (until the next new session).
    var archiveAvailable = true
    /// Results of our archive queries, by query id, until their answer comes.
    var archivePages: [String: [ArchiveItem]] = [:]
    /// The last message each contact was told we displayed (XEP-0333), to not repeat it.
    var displayedMarkersSent: [JID: String] = [:]
    /// Profiles by bare JID, as cached (see ChatClient+Profiles).
    var profiles: [JID: ContactProfile] = [:]
    /// Avatars by hash, for a client without a cache.
    var memoryAvatars: [String: Avatar] = [:]
    /// Profile fetches under way, so several presences with one hash fetch once.
    var profileFetches: Set<String> = []
    /// Friend requests not answered yet, by bare JID, as this session received them.
    var friendRequestsByJID: [JID: FriendRequest] = [:]
    /// Each contact's available resources, from their presence.
    var onlineResources: [JID: [String: OnlineResource]] = [:]
    /// XEP-0402 (true) or XEP-0048 (false) bookmarks, once asked in this session.
    var nativeBookmarks: Bool?
    /// The rooms we are in or entering (XEP-0045), see ChatClient+Rooms.
    var muc = RoomRegistry()
    /// The XEP-0363 service found for this account (see ChatClient+Upload).
    var uploadService: UploadServiceInfo?
    private var installed = false
    private let inbox: AsyncStream<InboxItem>.Continuation

    private enum InboxItem: Sendable {
        case stanza(XMLElement)
        /// Stanzas the server took responsibility for (see `XMPPClient.addAcknowledgementHandler`).
        case acknowledged([XMLElement])
        /// Resumed once every stanza queued before it has been handled (see `settle()`).
        case barrier(CheckedContinuation<Void, Never>)
    }

    struct Status: Equatable {
        var show = PresenceUpdate.Show.available
        var text: String?
    }

    /// - Parameter cachePath: the SQLite file for this account's cache; nil keeps nothing on
    ///   disk (the roster is then fetched in full at every login).
    public init(
        configuration: ClientConfiguration, cachePath: String? = nil,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger = Logger(label: "parley.chat")
    ) throws {
        xmpp = try XMPPClient(configuration: configuration, group: group, logger: logger)
        cache = try cachePath.map(ChatCache.init(path:))
        ownBareJID = configuration.jid.bare
        self.logger = logger
        // Stanzas are handled one at a time, in arrival order, by one task: the XMPP client's
        // handler only enqueues, so it never waits on this actor.
        let (stream, continuation) = AsyncStream.makeStream(of: InboxItem.self, bufferingPolicy: .unbounded)
        inbox = continuation
        Task { [weak self] in
            for await item in stream {
                switch item {
                case .stanza(let stanza):
                    guard let self else { return }
                    await self.handle(stanza)
                case .acknowledged(let stanzas):
                    guard let self else { return }
                    await self.acknowledged(stanzas)
                case .barrier(let continuation):
                    continuation.resume()
                }
            }
        }
    }

    deinit {
        inbox.finish()
    }

    // MARK: Connection

    /// Loads the cache, connects and returns once signed in (see `XMPPClient.connect()`).
    public func connect() async throws {
        if !installed {
            installed = true
            if let cache {
                let cached = try await cache.roster()
                for contact in cached.contacts { roster[contact.jid] = contact }
                rosterVersion = cached.version
                for contact in cached.contacts where contact.awaitingApproval { outgoingRequests.insert(contact.jid) }
                for profile in try await cache.profiles() { profiles[profile.jid] = profile }
            }
            await xmpp.setInitialPresence(presenceStanza(for: status))
            let inbox = self.inbox
            await xmpp.addStanzaHandler { stanza in inbox.yield(.stanza(stanza)) }
            await xmpp.addAcknowledgementHandler { stanzas in inbox.yield(.acknowledged(stanzas)) }
            await xmpp.addEstablishedHandler { [weak self] jid, resumed in await self?.sessionStarted(jid, resumed: resumed) }
            await resendUnacknowledged()
        }
        try await xmpp.connect()
    }

    public func disconnect() async {
        await xmpp.disconnect()
    }

    /// Returns once the server has processed everything sent so far (a ping comes back after
    /// it), has acknowledged it (XEP-0198), and everything the server sent before that answer
    /// has been handled here: the cache written and the events emitted. What a short-lived program waits for before
    /// signing out.
    public func settle() async throws {
        try await xmpp.ping()
        await xmpp.waitForAcknowledgements()
        await drainInbox()
    }

    /// Returns once every stanza received so far has been handled.
    func drainInbox() async {
        let inbox = self.inbox
        await withCheckedContinuation { inbox.yield(.barrier($0)) }
    }

    /// Runs after every successful (re)connect. A resumed session kept its roster and
    /// presence on the server, so only the archive is consulted, for order.
    private func sessionStarted(_ jid: JID, resumed: Bool) async {
        // Rooms first, in parallel with the rest: the sooner we are back, the less we miss.
        Task { await self.checkRooms() }
        if !resumed {
            archiveAvailable = true
            nativeBookmarks = nil
            do {
                try await refreshRoster()
            } catch ClientError.disconnected {
                return  // gone again already; the next session fetches it
            } catch {
                logger.warning("roster fetch failed", metadata: ["error": "\(error)"])
            }
            await enableCarbons()
        }
        do {
            try await synchronize()
        } catch ClientError.disconnected {
            return  // the next session catches up
        } catch {
            logger.warning("catching up with the archive failed", metadata: ["error": "\(error)"])
        }
    }

    /// Sets the user's availability and status text, now and after every reconnect.
    public func setStatus(_ show: PresenceUpdate.Show, text: String? = nil) async {
        status = Status(show: show, text: text)
        let presence = presenceStanza(for: status)
        await xmpp.setInitialPresence(presence)
        // While disconnected, the next session starts with it; queueing it too would send it twice.
        if await xmpp.boundJID != nil {
            await xmpp.send(presence)
            await announceStatusToRooms(presence)
        }
    }

    /// Our presence changed (its vCard photo hash): contacts learn of it now, and the next
    /// session starts with it.
    func republishPresence() async {
        let presence = presenceStanza(for: status)
        await xmpp.setInitialPresence(presence)
        if await xmpp.boundJID != nil, xmpp.configuration.sendsInitialPresence { await xmpp.send(presence) }
    }

    private func presenceStanza(for status: Status) -> XMLElement {
        var presence = XMLElement("presence", namespace: XMLNamespace.client)
        switch status.show {
        case .available: break
        case .unavailable: presence.setAttribute("type", "unavailable")
        case .away, .chat, .dnd, .xa: presence.append(XMLElement("show", text: status.show.rawValue))
        }
        if let text = status.text, !text.isEmpty { presence.append(XMLElement("status", text: text)) }
        if xmpp.configuration.initialPriority != 0 {
            presence.append(XMLElement("priority", text: String(xmpp.configuration.initialPriority)))
        }
        if status.show != .unavailable {
            // XEP-0115: who we are, so PEP services send the `+notify` nodes (avatars, nicknames).
            presence.append(EntityCapabilities.presenceElement)
            // XEP-0153 §3.2: our vCard photo's hash, or an empty element for "not known yet"
            // (a server that converts PEP avatars fills it in, as Prosody does).
            var update = XMLElement("x", namespace: ProfileNamespace.vcardUpdate)
            if let hash = profiles[ownBareJID]?.vcardPhotoHash { update.append(XMLElement("photo", namespace: ProfileNamespace.vcardUpdate, text: hash)) }
            presence.append(update)
        }
        return presence
    }

    // MARK: Dispatch

    private func handle(_ stanza: XMLElement) async {
        switch stanza.name {
        case "message": await handleMessage(stanza)
        case "presence": await handlePresence(stanza)
        case "iq": await handleIQ(stanza)
        default: break
        }
    }

    private func handleIQ(_ iq: XMLElement) async {
        // Results and errors are answers to our own requests, which the XMPP client matched.
        guard iq.type == "get" || iq.type == "set" else { return }
        if iq.type == "set", let query = iq.firstChild("query", namespace: XMLNamespace.roster) {
            return await rosterPush(iq, query)
        }
        if iq.type == "get", let query = iq.firstChild("query", namespace: XMLNamespace.discoInfo) {
            // XEP-0115 §6.2: a query for our caps node#ver gets the same answer, node echoed.
            let node = query[attribute: "node"]
            guard node == nil || node == "\(EntityCapabilities.node)#\(EntityCapabilities.ownVer)" else {
                if let reply = iq.errorReply(StanzaError(.itemNotFound, text: "No such node.")) { await xmpp.send(reply) }
                return
            }
            return await xmpp.send(iq.iqResult(EntityCapabilities.discoInfo(node: node)))
        }
        if iq.type == "get", iq.firstChild("query", namespace: XMLNamespace.version) != nil {
            // XEP-0092, without the operating system (§5 leaves it out for privacy).
            let answer = XMLElement("query", namespace: XMLNamespace.version, [:], [
                XMLElement("name", namespace: XMLNamespace.version, text: EntityCapabilities.softwareName),
                XMLElement("version", namespace: XMLNamespace.version, text: EntityCapabilities.softwareVersion),
            ])
            return await xmpp.send(iq.iqResult(answer))
        }
        // RFC 6120 §8.2.3: every get and set gets an answer, even "I don't do that".
        if let reply = iq.errorReply(StanzaError(.serviceUnavailable)) { await xmpp.send(reply) }
    }

    func emit(_ event: ClientEvent) async {
        await xmpp.emit(event)
    }

    /// Sends a stanza (queued while disconnected).
    func send(_ stanza: XMLElement) async {
        await xmpp.send(stanza)
    }

    /// Changes the account's password (XEP-0077 §3.3); the current session stays signed in.
    public func changePassword(to newPassword: String) async throws {
        var query = XMLElement("query", namespace: XMLNamespace.register)
        query.append(XMLElement("username", text: ownBareJID.localpart ?? ""))
        query.append(XMLElement("password", text: newPassword))
        _ = try await xmpp.request(XMLElement("iq", namespace: XMLNamespace.client, ["type": "set", "to": ownBareJID.domainpart], [query]))
    }
}
