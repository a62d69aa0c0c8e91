import ParleyCore

/// What the cache knows of a contact's (or our own) profile.
public struct ContactProfile: Sendable, Equatable {
    public var jid: JID
    /// Their own choice of name (XEP-0172), published in PEP or sent with a friend request.
    public var nickname: String?
    /// The XEP-0084 avatar's id (SHA-1 hex of its bytes); "" when they published "no avatar".
    public var avatarHash: String?
    /// The XEP-0153 photo hash the cached vCard fields below belong to.
    public var vcardPhotoHash: String?
    public var vcardFullName: String?
    public var vcardNickname: String?

    public init(jid: JID) {
        self.jid = jid
    }

    /// The picture to show: the PEP avatar, else the vCard photo.
    public var currentAvatarHash: String? {
        if let avatarHash, !avatarHash.isEmpty { return avatarHash }
        if let vcardPhotoHash, !vcardPhotoHash.isEmpty { return vcardPhotoHash }
        return nil
    }
}

/// An avatar's bytes, checked against their hash.
public struct Avatar: Sendable, Equatable {
    /// SHA-1 hex of `data`.
    public var hash: String
    public var type: String
    public var data: [UInt8]

    public init(hash: String, type: String, data: [UInt8]) {
        self.hash = hash
        self.type = type
        self.data = data
    }
}
