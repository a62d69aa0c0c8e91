#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `type` values RFC 6120 and RFC 6121 define for message, presence and iq, handed out as
/// string literals. Every router reads every stanza's `type`, it is nearly always one of these,
/// and a literal costs neither decoding nor a call into the String runtime.
///
/// A switch on the length rather than a table: the compares become a load or two each, where
/// looping over an array of Strings costs the router three times as many instructions.
enum StanzaTypeLiteral {
    /// The literal equal to `bytes`, or nil for any other value.
    @inline(__always)
    static func matching(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        let start = bytes.baseAddress.unsafelyUnwrapped
        func equals(_ literal: StaticString) -> Bool {
            memcmp(start, literal.utf8Start, literal.utf8CodeUnitCount) == 0
        }
        switch bytes.count {
        case 3:
            if equals("get") { return "get" }
            if equals("set") { return "set" }
        case 4:
            if equals("chat") { return "chat" }
        case 5:
            if equals("error") { return "error" }
            if equals("probe") { return "probe" }
        case 6:
            if equals("result") { return "result" }
            if equals("normal") { return "normal" }
        case 8:
            if equals("headline") { return "headline" }
        case 9:
            if equals("groupchat") { return "groupchat" }
            if equals("subscribe") { return "subscribe" }
        case 10:
            if equals("subscribed") { return "subscribed" }
        case 11:
            if equals("unavailable") { return "unavailable" }
            if equals("unsubscribe") { return "unsubscribe" }
        case 12:
            if equals("unsubscribed") { return "unsubscribed" }
        default:
            break
        }
        return nil
    }
}
