import COpenSSL

/// A failure of one of the OpenSSL primitives. These should never happen with valid input on a
/// working system; when one does, `reason` carries OpenSSL's own explanation for the logs.
public enum CryptoError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An OpenSSL call reported failure; `reason` is the drained error queue.
    case openSSL(operation: String, reason: String)
    /// A caller passed a value no primitive can work with (a length out of range, say).
    case invalidArgument(String)

    public var description: String {
        switch self {
        case .openSSL(let operation, let reason): "OpenSSL \(operation) failed: \(reason)"
        case .invalidArgument(let message): "invalid argument: \(message)"
        }
    }

    /// Builds the error for a failed call and empties this thread's OpenSSL error queue, so the
    /// stale entries cannot be blamed on a later, unrelated call on the same thread (TLS on an
    /// event loop thread reads the queue after every `SSL_*` call).
    static func openSSLFailure(_ operation: String) -> CryptoError {
        .openSSL(operation: operation, reason: OpenSSLErrorQueue.drain())
    }
}

enum OpenSSLErrorQueue {
    /// Removes every queued error on the calling thread and returns their texts joined by "; ".
    static func drain() -> String {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            let end = buffer.firstIndex(of: 0) ?? buffer.count
            messages.append(String(decoding: buffer[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages.isEmpty ? "no OpenSSL error queued" : messages.joined(separator: "; ")
    }
}
