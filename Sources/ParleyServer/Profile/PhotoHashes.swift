/// The XEP-0153 photo hash of each account online ("" for none), as `AvatarConversion`
/// stamps it into presence: a dictionary's interface over a set of the accounts without a
/// photo (most of them) and a dictionary of the others. One dictionary of both kept an
/// empty string beside each name, 16 bytes more per account online.
struct PhotoHashes: Sendable {
    private var withoutPhoto: Set<String> = []
    private var withPhoto: [String: String] = [:]

    init() {}

    subscript(username: String) -> String? {
        get {
            if withoutPhoto.contains(username) { return "" }
            return withPhoto[username]
        }
        set {
            if newValue == "" {
                withPhoto[username] = nil
                withoutPhoto.insert(username)
            } else {
                withoutPhoto.remove(username)
                withPhoto[username] = newValue
            }
        }
    }
}
