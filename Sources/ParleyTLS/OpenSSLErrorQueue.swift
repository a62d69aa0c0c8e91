import COpenSSL

/// OpenSSL keeps its error queue per thread, and an event loop thread serves many connections:
/// a stale entry from one connection must never be blamed on another. So every call site clears
/// the queue before an OpenSSL call and drains it right after, on the same thread.
enum OpenSSLErrorQueue {
    static func clear() {
        ERR_clear_error()
    }

    /// Empties the queue and returns its entries joined, or `fallback` when it was empty.
    static func drain(fallback: String = "unknown OpenSSL error") -> String {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages.isEmpty ? fallback : messages.joined(separator: "; ")
    }
}
