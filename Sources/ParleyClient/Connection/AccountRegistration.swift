import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ParleyCore
import ParleyTLS

extension XMPPClient {
    /// Creates the account `configuration.jid` with `configuration.password` by in-band
    /// registration (XEP-0077) on its own short connection: TLS first (credentials never go
    /// out in the clear unless `security` is `.none`), then the form, then the connection
    /// closes. Sign in afterwards with a normal client.
    ///
    /// Throws `ClientError.registrationRefused` with the server's stanza error when the name
    /// is taken, registration is off, or the password is refused.
    public static func registerAccount(
        configuration: ClientConfiguration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws {
        var configuration = configuration
        if configuration.webSocket == .discover {
            // The endpoint the domain's host-meta lists, as for signing in.
            do {
                configuration = try await XMPPClient.candidates(for: configuration)[0]
            } catch {
                throw ClientError.connectionFailed("\(error)")
            }
        }
        let tls = configuration.security == .none && configuration.webSocket == nil
            ? nil : try TLSContext(client: TLSClientConfiguration(trust: configuration.trust))
        let promise = group.next().makePromise(of: ConnectionEnd.self)
        let connection: ClientConnection
        do {
            connection = try await ClientConnection.open(configuration: configuration, tls: tls, group: group, registersAccount: true) {
                ClientStreamHandler.Callbacks(
                    onEstablished: { _, _, _ in }, onStanza: { _ in },
                    onClosed: { end in promise.succeed(end) })
            }
        } catch {
            promise.fail(error)
            throw ClientError.connectionFailed("cannot connect to \(configuration.serverHost):\(configuration.serverPort): \(error)")
        }
        let end = try await promise.futureResult.get()
        connection.close()
        switch end {
        case .registered: return
        case .registrationRefused(let error): throw ClientError.registrationRefused(error)
        case .certificateUntrusted(let reason): throw ClientError.certificateUntrusted(reason)
        case .authenticationFailed(let reason): throw ClientError.authenticationFailed(reason)
        case .streamError(let error): throw ClientError.connectionFailed(error.description)
        case .connectionLost(let reason): throw ClientError.connectionFailed(reason)
        case .serverSilent: throw ClientError.connectionFailed(ConnectionEnd.silenceDescription)
        case .redirected(let target): throw ClientError.connectionFailed("the server sent the client to \(target)")
        }
    }
}
