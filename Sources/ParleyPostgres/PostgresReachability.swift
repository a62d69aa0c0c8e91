import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyStorage
import PostgresNIO

/// The first connection of a start, made by hand before the pool's: the pool retries a
/// database it cannot reach with backoff and gave up on a lease only after about a minute, so
/// a wrong port or a stopped server held `parleyd run` for that long and then said little.
/// A refused or timed-out connection is retried for a short window (a database starting
/// beside the server, as at boot); a refusal by the server itself (wrong password, no such
/// database) is not going to change, and fails at once in the server's own words.
enum PostgresReachability {
    static let retryInterval: Duration = .milliseconds(250)

    static func check(_ url: PostgresURL, within window: Duration, on eventLoop: any EventLoop, logger: Logger) async throws {
        var configuration = try url.connectionConfiguration
        configuration.options.connectTimeout = TimeAmount(min(max(window, .milliseconds(100)), .seconds(10)))
        let deadline = ContinuousClock.now + window
        while true {
            do {
                let connection = try await PostgresConnection.connect(on: eventLoop, configuration: configuration, id: 0, logger: logger)
                try? await connection.close()
                return
            } catch {
                if !mayPassSoon(error) || ContinuousClock.now + retryInterval >= deadline {
                    throw StorageError.unusableDatabase("cannot connect to PostgreSQL at \(url): \(reason(error))")
                }
                try await Task.sleep(for: retryInterval)
            }
        }
    }

    /// Nobody answered (refused, unreachable, timed out), or the server is still starting
    /// (57P03, cannot_connect_now). Anything else (a wrong password, no such database, TLS
    /// the server does not offer) is the same on the next try.
    private static func mayPassSoon(_ error: any Error) -> Bool {
        switch error {
        case let error as PSQLError:
            if error.code == .connectionError { return true }
            return error.code == .server && error.serverInfo?[.sqlState] == "57P03"
        case is NIOConnectionError, is IOError, ChannelError.connectTimeout:
            return true
        default:
            return false
        }
    }

    /// postgres-nio's own description of its errors is deliberately generic; say what it was.
    static func reason(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let info = error.serverInfo, let message = info[.message] {
            return info[.sqlState].map { "\(message) (SQLSTATE \($0))" } ?? message
        }
        if error.code == .sslUnsupported { return "the server does not offer TLS, and sslmode is require" }
        guard let underlying = error.underlying else { return "\(error.code)" }
        return socketReason(underlying) ?? "\(underlying)"
    }

    /// "Connection refused" rather than NIO's account of each address it tried.
    private static func socketReason(_ error: any Error) -> String? {
        switch error {
        case let error as NIOConnectionError:
            return error.connectionErrors.lazy.compactMap { socketReason($0.error) }.first
                ?? error.dnsAError.flatMap(socketReason) ?? error.dnsAAAAError.flatMap(socketReason)
        case let error as IOError:
            return String(cString: strerror(error.errnoCode))
        case ChannelError.connectTimeout(let timeout):
            return "no answer within \(timeout.nanoseconds / 1_000_000) ms"
        default:
            return nil
        }
    }
}
