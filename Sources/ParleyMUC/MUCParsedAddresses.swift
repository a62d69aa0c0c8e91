import ParleyCore

/// The addresses `MUCService.send` parsed, by their text, while the service is busy: a quiet
/// service lets them go (`forgetQuietAddresses`), as each was a string or two per occupant and
/// session, made while a room filled and left on the pages of the fill's churn
/// (bench/README.md, MUC, seventh round).
struct MUCParsedAddresses {
    var jids: [String: JID] = [:]
    /// `send` parsed or looked one up since the last look.
    var used = false
}

extension MUCService {
    /// Forgets the parsed addresses if none was used since the last call.
    func forgetQuietAddresses() {
        addresses.withLockedValue { memo in
            if memo.used {
                memo.used = false
            } else if !memo.jids.isEmpty {
                memo.jids = [:]
            }
        }
    }
}
