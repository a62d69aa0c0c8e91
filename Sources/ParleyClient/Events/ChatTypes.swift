import Foundation
import ParleyCore

/// A chat message as the application sees it.
public struct ChatMessage: Sendable, Equatable {
    public var id: String?
    public var from: JID
    public var to: JID?
    public var body: String
    public var type: String
    public var thread: String?
    /// When it was sent, if the server delayed it (offline storage, XEP-0203); else nil.
    public var delayedUntil: Date?
    public var receiptRequested: Bool
    /// The file it shares (XEP-0066 link, XEP-0446 metadata), if it is a media message.
    public var media: MediaAttachment?

    public init(
        id: String?, from: JID, to: JID?, body: String, type: String = "chat", thread: String? = nil, delayedUntil: Date? = nil,
        receiptRequested: Bool = false, media: MediaAttachment? = nil
    ) {
        self.id = id
        self.from = from
        self.to = to
        self.body = body
        self.type = type
        self.thread = thread
        self.delayedUntil = delayedUntil
        self.receiptRequested = receiptRequested
        // Without the stanza (archive, carbons), a body that is just a link still counts.
        self.media = media ?? MediaAttachment(bodyURL: body)
    }
}

public struct PresenceUpdate: Sendable, Equatable {
    public enum Show: String, Sendable { case available, away, chat, dnd, xa, unavailable }
    public var from: JID
    public var show: Show
    public var status: String?
    public var priority: Int8

    public init(from: JID, show: Show, status: String? = nil, priority: Int8 = 0) {
        self.from = from
        self.show = show
        self.status = status
        self.priority = priority
    }
}

/// A roster entry (RFC 6121 §2).
public struct Contact: Sendable, Equatable, Hashable {
    public enum Subscription: String, Sendable { case none, to, from, both }
    public var jid: JID
    public var name: String?
    public var groups: [String]
    public var subscription: Subscription
    /// We asked to see their presence and they have not answered.
    public var awaitingApproval: Bool

    public init(jid: JID, name: String? = nil, groups: [String] = [], subscription: Subscription = .none, awaitingApproval: Bool = false) {
        self.jid = jid
        self.name = name
        self.groups = groups
        self.subscription = subscription
        self.awaitingApproval = awaitingApproval
    }

    /// Both see each other's presence: what chat apps call friends.
    public var isMutual: Bool { subscription == .both }
}

/// Someone who asked to see our presence and has no answer yet. The server repeats such
/// requests at every available presence until they are answered (RFC 6121 §3.1.3), so a
/// session knows them all without keeping them anywhere.
public struct FriendRequest: Sendable, Equatable {
    public var jid: JID
    public var message: String?
    /// The name they gave with the request (XEP-0172 §4.2).
    public var nickname: String?
}
